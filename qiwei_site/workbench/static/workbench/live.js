/*
 * 智能会话: live refresh. One conditional poll (If-None-Match → 304) at a time, about once a second
 * while the tab is visible and slowly while it is hidden. Each poll has a timeout; failures back
 * off with a cap and recover by themselves. A 304 costs nothing: `onChange` runs only for a 200,
 * and the ETag is kept only once `onChange` has finished, so a failed refresh is retried.
 *
 *   var poller = Qiwei.live.poller({
 *     url: function () { return "/workbench/api/.../version/" or null to idle },
 *     onChange: function (data) { return a promise; refetch what changed },
 *     onHealth: function (ok, error) { show or hide a banner },
 *     isHandled: function (error) { true when the server answered and the page dealt with it },
 *   });
 *   poller.start(); poller.poke(); poller.reset(); poller.stop();
 */
(function (global) {
  "use strict";

  var Qiwei = (global.Qiwei = global.Qiwei || {});

  var DEFAULTS = {
    intervalMs: 1200, // visible tab: a new message shows within ~1.5 s
    hiddenIntervalMs: 15000, // hidden tab: keep the session warm, spare the server
    timeoutMs: 4000, // a poll that has not answered by then is abandoned
    retryMs: 1500, // first retry after a failure, doubled each time...
    maxRetryMs: 15000, // ...up to this
  };

  function PollError(status, code, detail) {
    this.status = status;
    this.code = code;
    this.detail = detail;
  }

  function isVisible() {
    return typeof document.visibilityState !== "string" || document.visibilityState !== "hidden";
  }

  function poller(given) {
    var options = {};
    Object.keys(DEFAULTS).forEach(function (key) {
      options[key] = given[key] !== undefined ? given[key] : DEFAULTS[key];
    });
    var url = given.url;
    var onChange = given.onChange || function () {};
    var onHealth = given.onHealth || function () {};
    var isHandled =
      given.isHandled ||
      function () {
        return false;
      };

    var running = false;
    var timer = null;
    var inFlight = null; // {controller, generation}
    var generation = 0; // bumped by reset(): answers for an older URL are dropped
    var etag = null;
    var etagUrl = null;
    var failures = 0;
    var pokeAgain = false;
    var stats = { polls: 0, changes: 0, notModified: 0, failures: 0 };

    function nextDelay() {
      if (failures > 0) {
        var backoff = Math.min(options.maxRetryMs, options.retryMs * Math.pow(2, failures - 1));
        return Math.round(backoff * (0.8 + Math.random() * 0.4)); // jitter: tabs don't retry in step
      }
      return isVisible() ? options.intervalMs : options.hiddenIntervalMs;
    }

    function schedule(delay) {
      if (timer !== null) clearTimeout(timer);
      timer = running ? setTimeout(tick, delay) : null;
    }

    function fetchVersion(target, controller) {
      var headers = { Accept: "application/json" };
      if (etag && etagUrl === target) headers["If-None-Match"] = etag;
      return fetch(target, {
        method: "GET",
        headers: headers,
        credentials: "same-origin",
        cache: "no-store",
        signal: controller ? controller.signal : undefined,
      }).then(function (response) {
        if (response.status === 304) return null;
        return response.text().then(function (text) {
          var data = null;
          try {
            data = text ? JSON.parse(text) : null;
          } catch (e) {
            data = null;
          }
          if (!response.ok) {
            throw new PollError(
              response.status,
              (data && data.code) || "http_" + response.status,
              (data && data.detail) || "HTTP " + response.status
            );
          }
          return { data: data, etag: response.headers.get("ETag") };
        });
      });
    }

    function recovered() {
      if (failures === 0) return;
      failures = 0;
      onHealth(true, null);
    }

    function tick() {
      timer = null;
      if (!running) return;
      if (inFlight) {
        pokeAgain = true; // never two polls at once: run again when this one ends
        return;
      }
      var target = url();
      if (!target) {
        schedule(nextDelay());
        return;
      }
      var mine = generation;
      var controller = typeof AbortController === "function" ? new AbortController() : null;
      var timedOut = false;
      var timeout = setTimeout(function () {
        timedOut = true;
        if (controller) controller.abort();
      }, options.timeoutMs);
      inFlight = { controller: controller, generation: mine };
      stats.polls += 1;
      fetchVersion(target, controller)
        .then(
          function (result) {
            clearTimeout(timeout);
            return result;
          },
          function (error) {
            clearTimeout(timeout);
            throw timedOut ? new PollError(0, "timeout", "轮询超时") : error;
          }
        )
        .then(function (result) {
          if (mine !== generation) return;
          if (result === null) {
            stats.notModified += 1;
            return;
          }
          stats.changes += 1;
          return Promise.resolve(onChange(result.data)).then(function () {
            if (mine !== generation) return;
            etag = result.etag;
            etagUrl = target;
          });
        })
        .then(
          function () {
            if (mine === generation) recovered();
          },
          function (error) {
            if (mine !== generation) return; // aborted by reset(): not a failure
            if (isHandled(error)) {
              recovered(); // the server answered; the page dealt with what it said
              return;
            }
            failures += 1;
            stats.failures += 1;
            onHealth(false, error);
          }
        )
        .then(function () {
          if (mine !== generation) return; // reset() or stop() already took over the schedule
          inFlight = null;
          if (!running) return;
          var again = pokeAgain && failures === 0;
          pokeAgain = false;
          schedule(again ? 0 : nextDelay());
        });
    }

    function onVisibility() {
      if (!running) return;
      // Back in view: look at once (unless backing off after failures); hidden: the next delay is long.
      if (isVisible() && failures === 0) schedule(0);
    }

    return {
      start: function () {
        if (running) return;
        running = true;
        document.addEventListener("visibilitychange", onVisibility);
        schedule(options.intervalMs);
      },
      stop: function () {
        running = false;
        generation += 1;
        document.removeEventListener("visibilitychange", onVisibility);
        schedule(0);
        if (inFlight && inFlight.controller) inFlight.controller.abort();
        inFlight = null;
      },
      /** Poll now (after a local action), or right after the poll in flight. */
      poke: function () {
        if (!running) return;
        if (inFlight) pokeAgain = true;
        else schedule(0);
      },
      /** The URL or what the page holds changed: forget the ETag, drop the poll in flight. */
      reset: function () {
        generation += 1;
        etag = null;
        etagUrl = null;
        if (inFlight) {
          if (inFlight.controller) inFlight.controller.abort();
          inFlight = null;
        }
        pokeAgain = false;
        if (running) schedule(failures > 0 ? nextDelay() : options.intervalMs);
      },
      failing: function () {
        return failures > 0;
      },
      stats: stats,
    };
  }

  Qiwei.live = { poller: poller, PollError: PollError, DEFAULTS: DEFAULTS };
})(window);
