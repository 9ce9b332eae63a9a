/*
 * 智能会话: every time on the page in one zone and one format ("2026-12-01 19:05"), the server's
 * settings.TIME_ZONE (Asia/Shanghai), whatever zone the browser is in. API values stay ISO 8601
 * with their offset; only the display is converted.
 */
(function (global) {
  "use strict";

  var Qiwei = (global.Qiwei = global.Qiwei || {});
  var zone = "Asia/Shanghai";
  // Used only where Intl cannot convert to a named zone: the zone's offset when the page was served.
  var fallbackOffsetMinutes = 480;
  var formatter = null;

  function pad(value) {
    return (value < 10 ? "0" : "") + value;
  }

  function buildFormatter() {
    try {
      return new Intl.DateTimeFormat("zh-CN", {
        timeZone: zone,
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
        hour: "2-digit",
        minute: "2-digit",
        hourCycle: "h23",
      });
    } catch (e) {
      return null; // unknown zone or no Intl time-zone support: fixed offset below
    }
  }

  function configure(options) {
    options = options || {};
    if (options.timeZone) zone = options.timeZone;
    if (typeof options.utcOffsetMinutes === "number") fallbackOffsetMinutes = options.utcOffsetMinutes;
    formatter = buildFormatter();
  }

  function fromParts(date) {
    var parts = {};
    formatter.formatToParts(date).forEach(function (part) {
      parts[part.type] = part.value;
    });
    // Some engines still say "24" for midnight even with h23.
    var hour = parts.hour === "24" ? "00" : parts.hour;
    return parts.year + "-" + parts.month + "-" + parts.day + " " + hour + ":" + parts.minute;
  }

  function fromOffset(date) {
    var shifted = new Date(date.getTime() + fallbackOffsetMinutes * 60000);
    return (
      shifted.getUTCFullYear() +
      "-" +
      pad(shifted.getUTCMonth() + 1) +
      "-" +
      pad(shifted.getUTCDate()) +
      " " +
      pad(shifted.getUTCHours()) +
      ":" +
      pad(shifted.getUTCMinutes())
    );
  }

  /** "2026-12-01 19:05" in the configured zone; "" for no value; the raw value if unparsable. */
  function format(value) {
    if (!value) return "";
    var date = value instanceof Date ? value : new Date(value);
    if (isNaN(date.getTime())) return String(value);
    if (formatter === null) formatter = buildFormatter();
    return formatter ? fromParts(date) : fromOffset(date);
  }

  Qiwei.time = {
    configure: configure,
    format: format,
    zone: function () {
      return zone;
    },
  };
})(window);
