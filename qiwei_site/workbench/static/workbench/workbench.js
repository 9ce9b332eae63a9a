/*
 * 智能会话 (spec §9): offline-first start-up and live refresh.
 * 1. Load local conversations, memory, tasks and audit for the account bound in this origin's
 *    localStorage at once; 2. read /api/status?fast=true with a 2.5 s cap; 3. refresh the account
 *    binding in the background; 4. when the upstream is down or unknown, only sending is disabled;
 * 5. poll the Workbench version (live.js) and refetch only what changed, each panel re-rendering
 *    only when its own data changed.
 * Local loading never waits for the status call.
 *
 * Panels: everything shown for one customer is a panel, `{name, select(overview), render(slice,
 * overview, context), clear()}`, registered with `QiweiWorkbench.registerPanel`. A new panel (in its
 * own script, loaded after this one) registers itself and reads the overview it is given; helpers
 * for it are in `QiweiWorkbench.ui`. A script may also add a control to every draft with
 * `QiweiWorkbench.registerDraftAction` (prompt.js: 查看提示词).
 *
 * Drafts (issue 39): 生成草稿 and 重新生成 ask the Workbench's own endpoint, which answers at once
 * with a 生成中 draft; the model works in the background and the poll shows the result. A generating
 * draft is a card with its elapsed time (after a reload too: it is a row like any other); one
 * generating longer than the server's `draft_stale_seconds` is shown as interrupted, with 重新生成.
 */
(function (global) {
  "use strict";

  var Qiwei = global.Qiwei || {};
  var STORE_ACCOUNT = "qiwei.account";
  var STORE_ACCOUNTS = "qiwei.accounts";
  var STORE_CONVERSATION = "qiwei.conversation.";
  var STATUS_URL = "/api/status?fast=true";
  var STATUS_TIMEOUT_MS = 2500;
  var STATUS_REFRESH_MS = 30000;
  var REQUEST_TIMEOUT_MS = 10000;
  var SESSION_MODES = { manual: "人工模式", assisted: "辅助模式", auto: "自动模式" };
  var LIVE_FAILING = "连接中断，正在重试…";
  var LIVE_SIGNED_OUT = "登录已失效，请刷新页面重新登录";

  var state = {
    accounts: [],
    account: "",
    conversation: "",
    conversations: [],
    overview: null,
    overviewFor: null, // "account/conversation" the panels show, to tell a switch from a refresh
    loadSeq: 0,
    editing: {},
    busy: {},
    generating: false, // a 生成草稿 request on its way
    rendered: {}, // panel name → the data it last rendered
    known: { conversations: null, conversation: null }, // ETags of what the page holds
    upstream: { state: "checking", reason: "正在检查企微连接" },
  };
  var panels = [];
  var draftActions = []; // more buttons on each draft: {action, label, available(draft), run(draft, button)}
  var poller = null;
  var config = null;

  function $(id) {
    return document.getElementById(id);
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined || value === false) return;
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    });
    (children || []).forEach(function (child) {
      if (child) node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function formatTime(value) {
    return Qiwei.time ? Qiwei.time.format(value) : value || "";
  }

  function timeNode(value, className) {
    return el("time", { datetime: value || null, className: className || null, text: formatTime(value) });
  }

  // --- storage (per origin) -----------------------------------------------------------

  function storeGet(key) {
    try {
      return window.localStorage.getItem(key);
    } catch (e) {
      return null;
    }
  }

  function storeSet(key, value) {
    try {
      if (value) window.localStorage.setItem(key, value);
      else window.localStorage.removeItem(key);
    } catch (e) {
      /* storage may be unavailable (private mode): the page still works for this visit */
    }
  }

  function storedAccounts() {
    try {
      var parsed = JSON.parse(storeGet(STORE_ACCOUNTS) || "null");
      return Array.isArray(parsed) ? parsed : null;
    } catch (e) {
      return null;
    }
  }

  // --- HTTP -----------------------------------------------------------------------------

  function csrfToken() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function ApiError(status, code, detail) {
    this.status = status;
    this.code = code;
    this.detail = detail;
  }

  /** The bare token of an ETag header (`W/"abc"` → `abc`). */
  function etagToken(header) {
    return header ? header.replace(/^W\//, "").replace(/^"|"$/g, "") : null;
  }

  /**
   * One request, resolving to {status, data, etag}; a 304 resolves with data null. `options.etag`
   * makes it conditional; `options.signal` lets the caller abort; every request gives up after
   * `options.timeoutMs` (10 s) so a hanging server never leaves the page waiting for ever.
   */
  function request(method, url, options) {
    options = options || {};
    var headers = { Accept: "application/json" };
    if (method !== "GET") {
      headers["Content-Type"] = "application/json";
      headers["X-CSRFToken"] = csrfToken();
    }
    if (options.etag) headers["If-None-Match"] = '"' + options.etag + '"';
    var controller = typeof AbortController === "function" ? new AbortController() : null;
    var timer = setTimeout(function () {
      if (controller) controller.abort();
    }, options.timeoutMs || REQUEST_TIMEOUT_MS);
    if (options.signal && controller) {
      options.signal.addEventListener("abort", function () {
        controller.abort();
      });
    }
    return fetch(url, {
      method: method,
      headers: headers,
      credentials: "same-origin",
      // Our own If-None-Match decides; the HTTP cache would turn a 304 back into an old 200.
      cache: "no-store",
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: controller ? controller.signal : undefined,
    })
      .then(function (response) {
        if (response.status === 304) return { status: 304, data: null, etag: response.headers.get("ETag") };
        return response.text().then(function (text) {
          var data = null;
          try {
            data = text ? JSON.parse(text) : null;
          } catch (e) {
            data = null;
          }
          if (!response.ok) {
            var detail = data && data.detail ? data.detail : "接口不可用（HTTP " + response.status + "）";
            throw new ApiError(response.status, (data && data.code) || "http_" + response.status, detail);
          }
          return { status: response.status, data: data, etag: response.headers.get("ETag") };
        });
      })
      .then(
        function (result) {
          clearTimeout(timer);
          return result;
        },
        function (error) {
          clearTimeout(timer);
          throw error;
        }
      );
  }

  function api(method, url, body, signal) {
    return request(method, url, { body: body, signal: signal }).then(function (result) {
      return result.data;
    });
  }

  function accountUrl(path) {
    return "/api/accounts/" + encodeURIComponent(state.account) + "/" + path;
  }

  function workbenchUrl(account, path) {
    return "/workbench/api/accounts/" + encodeURIComponent(account) + "/" + path;
  }

  function conversationUrl(account, conversation, path) {
    return workbenchUrl(account, "conversations/" + encodeURIComponent(conversation) + "/" + path);
  }

  function showError(message, action) {
    var box = $("wb-error");
    if (!message) {
      box.hidden = true;
      box.textContent = "";
      return;
    }
    box.hidden = false;
    box.textContent = message;
    if (action) {
      // The way out the message names, right beside it (e.g. 重新生成 when the message was answered).
      box.appendChild(document.createTextNode(" "));
      box.appendChild(
        el("button", {
          type: "button",
          className: "wb-button wb-button--primary",
          "data-action": action.name,
          text: action.label,
          onclick: action.run,
        })
      );
    }
  }

  function errorText(prefix, error) {
    if (error instanceof ApiError) return prefix + "：" + error.detail;
    return prefix + "：" + (error && error.message ? error.message : "网络错误");
  }

  // --- panels ---------------------------------------------------------------------------

  function registerPanel(panel) {
    panels.push(panel);
    // A panel registered after the data arrived catches up at once.
    if (state.overview) renderPanel(panel, state.overview, { switched: true });
  }

  function renderPanel(panel, data, context) {
    var slice = panel.select ? panel.select(data) : data;
    var key = JSON.stringify(slice === undefined ? null : slice);
    if (!context.switched && state.rendered[panel.name] === key) return; // its data did not change
    try {
      panel.render(slice, data, context);
      state.rendered[panel.name] = key;
    } catch (error) {
      // One broken panel must not take the others down.
      if (window.console) window.console.error("panel " + panel.name + " failed", error);
    }
  }

  function renderOverview(data, switched) {
    var context = { switched: !!switched };
    panels.forEach(function (panel) {
      renderPanel(panel, data, context);
    });
  }

  function clearPanels() {
    state.rendered = {};
    panels.forEach(function (panel) {
      if (panel.clear) panel.clear();
    });
  }

  function renderSimpleList(list, items, emptyText, render) {
    clear(list);
    if (!items || !items.length) {
      list.appendChild(el("li", { className: "wb-muted", text: emptyText }));
      return;
    }
    items.forEach(function (item) {
      list.appendChild(render(item));
    });
  }

  /** The snapshot's Markdown as headings and lists (markdown.js), or as plain text without it. */
  function renderSnapshot(container, text) {
    if (Qiwei.markdown) Qiwei.markdown.render(container, text, { headingOffset: 3 });
    else container.textContent = text;
  }

  registerPanel({
    name: "customer",
    select: function (data) {
      return data.customer;
    },
    render: function (customer) {
      $("wb-customer-name").textContent = customer.display_name || customer.conversation_id;
      $("wb-customer-meta").textContent =
        "会话 " +
        customer.conversation_id +
        " · " +
        (SESSION_MODES[customer.session_mode] || customer.session_mode) +
        (customer.auto_send_whitelisted ? " · 自动发送白名单" : "");
      applyGenerateState();
    },
    clear: function () {
      $("wb-customer-name").textContent = "请选择会话";
      $("wb-customer-meta").textContent = "";
      applyGenerateState();
    },
  });

  // The thread keeps the reader's place: it follows new messages only when it was at the bottom.
  function nearBottom(list) {
    return list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  }

  function scrollToNewest() {
    var list = $("wb-messages");
    list.scrollTop = list.scrollHeight;
  }

  function renderMessages(messages, context) {
    var list = $("wb-messages");
    var follow = context.switched || nearBottom(list);
    var kept = list.scrollTop;
    clear(list);
    if (!messages.length) list.appendChild(el("li", { className: "wb-muted", text: "暂无消息。" }));
    messages.forEach(function (message) {
      var who = message.direction === "inbound" ? "客户" : message.direction === "outbound" ? "客服" : "系统";
      list.appendChild(
        el(
          "li",
          {
            className: "wb-message wb-message--" + message.direction,
            "data-direction": message.direction,
            "data-message": String(message.id),
          },
          [
            el("div", { className: "wb-message-meta" }, [
              el("span", { className: "wb-message-who", text: who + (message.sender ? " · " + message.sender : "") }),
              timeNode(message.sent_at),
            ]),
            el("p", { className: "wb-message-text", text: message.text }),
          ]
        )
      );
    });
    if (follow) {
      // Again after layout (the drafts below may still be growing), so the newest is really in view.
      scrollToNewest();
      window.requestAnimationFrame(scrollToNewest);
    } else {
      list.scrollTop = kept;
    }
  }

  registerPanel({
    name: "messages",
    select: function (data) {
      return data.messages;
    },
    render: function (messages, data, context) {
      renderMessages(messages || [], context);
    },
    clear: function () {
      clear($("wb-messages"));
    },
  });

  registerPanel({
    name: "drafts",
    select: function (data) {
      return data.drafts;
    },
    render: function (drafts) {
      renderDrafts(drafts || []);
    },
    clear: function () {
      clear($("wb-drafts"));
    },
  });

  registerPanel({
    name: "profile",
    select: function (data) {
      return data.profile;
    },
    render: function (fields) {
      var list = $("wb-profile");
      clear(list);
      (fields || []).forEach(function (field) {
        list.appendChild(el("dt", { text: field.label }));
        list.appendChild(el("dd", { className: field.value ? "" : "wb-muted", text: field.value || "未填写" }));
      });
    },
    clear: function () {
      clear($("wb-profile"));
    },
  });

  // Tasks, alerts and recommendations: the 业务 panel, in business.js.

  registerPanel({
    name: "snapshot",
    select: function (data) {
      return { snapshot: data.snapshot, admin: data.memory_admin_url };
    },
    render: function (slice) {
      var snapshot = slice.snapshot;
      renderSnapshot($("wb-snapshot"), snapshot ? snapshot.content || "（快照为空）" : "暂无快照。");
      $("wb-snapshot-version").textContent = snapshot
        ? "v" + snapshot.version + " · " + snapshot.char_count + " 字 · " + formatTime(snapshot.created_at)
        : "";
      var link = $("wb-memory-admin");
      if (slice.admin && link) link.setAttribute("href", slice.admin);
    },
    clear: function () {
      renderSnapshot($("wb-snapshot"), "暂无快照。");
      $("wb-snapshot-version").textContent = "";
    },
  });

  registerPanel({
    name: "audit",
    select: function (data) {
      return data.audit;
    },
    render: function (events) {
      renderSimpleList($("wb-audit"), events, "暂无审计记录。", function (event) {
        return el("li", { "data-audit": String(event.id) }, [
          timeNode(event.created_at, "wb-audit-time"),
          el("span", { className: "wb-audit-action", text: event.action_label || event.action }),
          " · " + (event.actor_label || event.actor_name || "系统"),
          event.reason ? el("span", { className: "wb-muted", text: " · " + event.reason }) : null,
        ]);
      });
    },
    clear: function () {
      clear($("wb-audit"));
    },
  });

  // --- accounts -------------------------------------------------------------------------

  function renderAccounts() {
    var select = $("wb-account-select");
    clear(select);
    select.appendChild(el("option", { value: "", text: "— 请选择账号 —" }));
    state.accounts.forEach(function (account) {
      select.appendChild(
        el("option", { value: account.id, selected: account.id === state.account, text: account.name + "（" + account.id + "）" })
      );
    });
    select.value = state.account;
    $("wb-account-hint").textContent = state.accounts.length ? "" : "没有可访问的账号，请联系主管授权。";
  }

  function knownAccount(id) {
    return state.accounts.some(function (account) {
      return account.id === id;
    });
  }

  function bindAccount(id) {
    if (id === state.account) return;
    state.account = id;
    storeSet(STORE_ACCOUNT, id);
    state.conversation = "";
    state.known = { conversations: null, conversation: null };
    clearCustomer();
    renderAccounts();
    if (poller) poller.reset();
    loadConversations();
  }

  function refreshAccounts() {
    // Background: the server is the authority on which accounts this user may see.
    return api("GET", "/workbench/api/accounts/")
      .then(function (data) {
        state.accounts = (data && data.results) || [];
        storeSet(STORE_ACCOUNTS, JSON.stringify(state.accounts));
        if (state.account && !knownAccount(state.account)) {
          state.account = "";
          state.conversation = "";
          storeSet(STORE_ACCOUNT, "");
          clearCustomer();
          clear($("wb-conversation-list"));
          if (poller) poller.reset();
        }
        renderAccounts();
        if (!state.account && state.accounts.length) bindAccount(state.accounts[0].id);
      })
      .catch(function (error) {
        $("wb-account-hint").textContent = errorText("账号列表刷新失败", error);
      });
  }

  // --- upstream status ------------------------------------------------------------------

  function setUpstream(kind, reason, extra) {
    state.upstream = { state: kind, reason: reason };
    var banner = $("wb-status-banner");
    banner.className = "wb-banner wb-banner--" + kind;
    banner.setAttribute("data-state", kind);
    if (kind === "online") {
      $("wb-status-title").textContent = "企微连接正常";
      $("wb-status-detail").textContent = extra || "可以收发消息。";
    } else if (kind === "checking") {
      $("wb-status-title").textContent = "正在检查企微连接…";
      $("wb-status-detail").textContent = "本地会话、草稿、记忆和审计可先行使用。";
    } else {
      $("wb-status-title").textContent = "企微连接不可用：" + reason;
      $("wb-status-detail").textContent = "暂时无法发送和接收消息；草稿、记忆和审计可正常使用。";
    }
    applySendState();
  }

  function sendBlockedReason() {
    var upstream = state.upstream;
    if (upstream.state === "online") return "";
    if (upstream.state === "checking") return "正在检查企微连接，暂时无法发送";
    return "企微连接不可用：" + upstream.reason + "，暂时无法发送；草稿、记忆和审计可正常使用";
  }

  function applySendState() {
    var reason = sendBlockedReason();
    var note = $("wb-send-reason");
    note.hidden = !reason;
    note.textContent = reason;
    Array.prototype.forEach.call(document.querySelectorAll("button[data-action='send']"), function (button) {
      button.disabled = !!reason || button.getAttribute("data-busy") === "1";
      if (reason) button.title = reason;
      else button.removeAttribute("title");
    });
  }

  // The gateway's own subscription codes in Chinese; a value the upstream invents is shown as it came.
  var SUBSCRIPTION_LABELS = { local: "本地回环网关", "wecom-kf": "企业微信客服" };

  function checkStatus() {
    // The chosen account's own upstream (its WeCom kf connection) when it has one.
    var url = state.account ? STATUS_URL + "&account=" + encodeURIComponent(state.account) : STATUS_URL;
    return request("GET", url, { timeoutMs: STATUS_TIMEOUT_MS })
      .then(function (result) {
        var data = result.data || {};
        var extra = data.subscription ? "订阅：" + (SUBSCRIPTION_LABELS[data.subscription] || data.subscription) : "";
        if (data.online === true && data.logged_in !== false) setUpstream("online", "", extra);
        else if (data.online === true) setUpstream("offline", data.detail || "企微账号未登录");
        else if (data.online === false) setUpstream("offline", data.detail || "上游网关不可达");
        else setUpstream("unknown", "连接状态未知");
      })
      .catch(function (error) {
        if (error && error.name === "AbortError") setUpstream("unknown", "状态检查超时（2.5 秒）");
        else if (error instanceof ApiError) setUpstream("unknown", "状态接口不可用（" + error.detail + "）");
        else setUpstream("unknown", "无法读取连接状态");
      });
  }

  // --- conversations --------------------------------------------------------------------

  /** The list, conditional on the ETag the page holds when `conditional`; null if the account changed. */
  function fetchConversations(account, conditional) {
    var etag = conditional ? state.known.conversations : null;
    return request("GET", workbenchUrl(account, "conversations/"), { etag: etag }).then(function (result) {
      if (account !== state.account) return null;
      state.known.conversations = etagToken(result.etag) || state.known.conversations;
      if (result.status === 304) return null;
      state.conversations = (result.data && result.data.results) || [];
      renderConversations(state.conversations);
      return state.conversations;
    });
  }

  function loadConversations() {
    // At start-up and on an account switch: the list, then the remembered (or first) conversation.
    var account = state.account;
    if (!account) return Promise.resolve();
    return fetchConversations(account, false)
      .then(function (items) {
        if (items === null) return;
        var remembered = storeGet(STORE_CONVERSATION + account);
        var pick = items.some(function (c) {
          return c.conversation_id === remembered;
        })
          ? remembered
          : items.length
            ? items[0].conversation_id
            : "";
        if (pick) return selectConversation(pick);
        state.conversation = "";
        clearCustomer();
        if (poller) poller.reset();
      })
      .catch(function (error) {
        if (account === state.account) showError(errorText("会话列表加载失败", error));
      });
  }

  /** The list again if it changed (a 304 renders nothing); rejects on failure, for the poller. */
  function refreshConversations() {
    if (!state.account) return Promise.resolve();
    return fetchConversations(state.account, true);
  }

  function renderConversations(items) {
    var list = $("wb-conversation-list");
    var panel = list.parentNode;
    var scroll = panel ? panel.scrollTop : 0;
    var active = document.activeElement;
    var focused = active && list.contains(active) ? active.getAttribute("data-conversation") : null;
    clear(list);
    $("wb-conversations-empty").hidden = items.length > 0;
    items.forEach(function (item) {
      var badges = [];
      if (item.pending_drafts) badges.push(el("span", { className: "wb-badge wb-badge--draft", text: "草稿 " + item.pending_drafts }));
      if (item.unresolved_alerts) badges.push(el("span", { className: "wb-badge wb-badge--alert", text: "预警 " + item.unresolved_alerts }));
      if (item.open_tasks) badges.push(el("span", { className: "wb-badge", text: "待办 " + item.open_tasks }));
      var preview = item.last_message_text || "";
      if (preview && item.last_message_direction === "outbound") preview = "客服：" + preview;
      var button = el(
        "button",
        {
          type: "button",
          className: "wb-conversation",
          "data-conversation": item.conversation_id,
          "aria-current": item.conversation_id === state.conversation ? "true" : null,
          onclick: function () {
            selectConversation(item.conversation_id);
          },
        },
        [
          el("span", { className: "wb-conversation-name", text: item.display_name || item.conversation_id }),
          timeNode(item.last_message_at, "wb-conversation-time"),
          el("span", { className: "wb-conversation-preview", text: preview }),
          el("span", { className: "wb-conversation-badges" }, badges),
        ]
      );
      list.appendChild(el("li", {}, [button]));
      if (focused === item.conversation_id) button.focus({ preventScroll: true });
    });
    if (panel) panel.scrollTop = scroll;
  }

  function markSelected() {
    Array.prototype.forEach.call(document.querySelectorAll(".wb-conversation"), function (button) {
      if (button.getAttribute("data-conversation") === state.conversation) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
    });
  }

  function selectConversation(conversationId) {
    if (state.conversation !== conversationId) showError(""); // an error (and its button) was about the other one
    state.conversation = conversationId;
    storeSet(STORE_CONVERSATION + state.account, conversationId);
    state.editing = {};
    state.busy = {};
    state.overviewFor = null; // a full render, even of the same conversation
    state.known.conversation = null;
    markSelected();
    if (poller) poller.reset();
    return loadOverview();
  }

  /**
   * The open customer's overview. A refresh of the same customer is conditional (304: nothing is
   * rendered) and, with `quiet`, rejects instead of showing an error, so the poller retries.
   */
  function loadOverview(options) {
    options = options || {};
    var account = state.account;
    var conversation = state.conversation;
    if (!account || !conversation) return Promise.resolve();
    var seq = ++state.loadSeq;
    var target = account + "/" + conversation;
    var switched = state.overviewFor !== target;
    var etag = switched ? null : state.known.conversation;
    return request("GET", conversationUrl(account, conversation, "overview/"), { etag: etag }).then(
      function (result) {
        if (seq !== state.loadSeq) return;
        state.known.conversation = etagToken(result.etag) || state.known.conversation;
        if (result.status === 304) return;
        state.overview = result.data;
        state.overviewFor = target;
        renderOverview(result.data, switched);
      },
      function (error) {
        if (seq !== state.loadSeq) return;
        if (options.quiet) throw error;
        showError(errorText("会话加载失败", error));
      }
    );
  }

  function clearCustomer() {
    state.overview = null;
    state.overviewFor = null;
    state.known.conversation = null;
    clearPanels();
  }

  /** After a local action: what it changed, at once (the poller would see it within a second too). */
  function refreshAll() {
    return Promise.all([loadOverview(), refreshConversations().catch(function () {})]);
  }

  // --- live refresh ---------------------------------------------------------------------

  function versionUrl() {
    if (!state.account) return null;
    if (state.conversation) return conversationUrl(state.account, state.conversation, "version/");
    return workbenchUrl(state.account, "version/");
  }

  function onVersion(data) {
    data = data || {};
    var work = [];
    if (data.conversations && data.conversations !== state.known.conversations) work.push(refreshConversations());
    if (
      data.conversation_id &&
      data.conversation_id === state.conversation &&
      data.conversation !== state.known.conversation
    ) {
      work.push(loadOverview({ quiet: true }));
    }
    return Promise.all(work);
  }

  function isGone(error) {
    // The server answered that what the page shows is gone: the page moves on, it is no outage.
    if (!error || error.status !== 404) return false;
    if (error.code === "conversation_not_found" && state.conversation) {
      state.conversation = ""; // erased: show the list's first conversation instead
      clearCustomer();
      loadConversations();
    } else {
      refreshAccounts(); // the account itself is no longer visible to this user
    }
    return true;
  }

  function setLive(ok, error) {
    var banner = $("wb-live-banner");
    if (ok) {
      banner.hidden = true;
      banner.setAttribute("data-state", "ok");
      return;
    }
    var signedOut = error && (error.status === 401 || error.status === 403);
    banner.textContent = signedOut ? LIVE_SIGNED_OUT : LIVE_FAILING;
    banner.setAttribute("data-state", signedOut ? "signed-out" : "failing");
    banner.hidden = false;
  }

  function startLive() {
    if (!Qiwei.live) return;
    poller = Qiwei.live.poller({ url: versionUrl, onChange: onVersion, onHealth: setLive, isHandled: isGone });
    poller.start();
  }

  // --- drafts ---------------------------------------------------------------------------

  function draftText(draft) {
    return draft.final_text || draft.reply || "";
  }

  /** Where the focus is inside `container`, to put it back after a re-render. */
  function focusInside(container) {
    var active = document.activeElement;
    if (!active || !container.contains(active)) return null;
    var item = active.closest("[data-draft]");
    return {
      draft: item ? item.getAttribute("data-draft") : null,
      action: active.getAttribute("data-action"),
      tag: active.tagName.toLowerCase(),
      start: active.selectionStart,
      end: active.selectionEnd,
    };
  }

  function restoreFocus(container, focus) {
    if (!focus || !focus.draft) return;
    var item = container.querySelector("li[data-draft='" + focus.draft + "']");
    if (!item) return;
    var target = focus.action
      ? item.querySelector("[data-action='" + focus.action + "']")
      : item.querySelector(focus.tag);
    if (!target) return;
    target.focus({ preventScroll: true });
    if (typeof focus.start === "number" && target.setSelectionRange) target.setSelectionRange(focus.start, focus.end);
  }

  function renderDrafts(drafts) {
    var list = $("wb-drafts");
    var focus = focusInside(list);
    clear(list);
    $("wb-drafts-empty").hidden = drafts.length > 0;
    drafts.forEach(function (draft) {
      list.appendChild(renderDraft(draft));
    });
    restoreFocus(list, focus);
    applySendState();
    applyGenerateState();
  }

  // --- drafts being generated -------------------------------------------------------------

  /** Seconds since `value` (an ISO time), never negative (the browser's clock may run behind). */
  function secondsSince(value) {
    var started = Date.parse(value || "");
    return isNaN(started) ? 0 : Math.max(0, Math.floor((Date.now() - started) / 1000));
  }

  function elapsedText(seconds) {
    if (seconds < 60) return seconds + " 秒";
    var minutes = Math.floor(seconds / 60);
    var rest = seconds % 60;
    return minutes + " 分 " + (rest < 10 ? "0" : "") + rest + " 秒";
  }

  function staleAfterSeconds() {
    return pageConfig().draft_stale_seconds || 300;
  }

  function generationStale(draft) {
    return draft.status === "generating" && secondsSince(draft.created_at) > staleAfterSeconds();
  }

  /** A generating draft still being worked on (not one whose worker seems to have died). */
  function generationRunning() {
    return currentDrafts().some(function (draft) {
      return draft.status === "generating" && !generationStale(draft);
    });
  }

  /** 生成草稿 is off without a customer and while a draft is being generated (also after a reload). */
  function applyGenerateState() {
    var button = $("wb-generate-draft");
    var running = !!state.conversation && !!state.overview && generationRunning();
    button.disabled = !state.conversation || !state.overview || running || state.generating === true;
    button.textContent = running || state.generating === true ? "生成中…" : "生成草稿";
  }

  function elapsedNode(draft) {
    return el("span", {
      className: "wb-draft-elapsed",
      "data-generating-since": draft.created_at,
      text: "已用时 " + elapsedText(secondsSince(draft.created_at)),
    });
  }

  // Once a second: the elapsed time of each generating draft, and the stale ones re-rendered once.
  function tickElapsed() {
    var nodes = document.querySelectorAll("[data-generating-since]");
    var restale = false;
    Array.prototype.forEach.call(nodes, function (node) {
      var seconds = secondsSince(node.getAttribute("data-generating-since"));
      node.textContent = "已用时 " + elapsedText(seconds);
      var item = node.closest("[data-draft]");
      if (seconds > staleAfterSeconds() && item && item.getAttribute("data-stale") !== "1") restale = true;
    });
    if (restale) renderDrafts(currentDrafts());
  }

  function actionButton(label, action, draft, extraClass) {
    var busy = !!state.busy[draft.id];
    return el("button", {
      type: "button",
      className: "wb-button " + (extraClass || ""),
      "data-action": action,
      "data-draft": String(draft.id),
      "data-busy": busy ? "1" : null,
      disabled: busy,
      text: label,
      onclick: function (event) {
        runDraftAction(action, draft, event.currentTarget);
      },
    });
  }

  function renderDraft(draft) {
    var meta = [
      el("span", { className: "wb-badge wb-badge--" + draft.status, text: draft.status_label }),
      el("span", { className: "wb-muted", text: "置信度 " + Math.round((draft.confidence || 0) * 100) + "%" }),
    ];
    if (draft.requires_human) meta.push(el("span", { className: "wb-badge wb-badge--alert", text: "需要人工" }));
    meta.push(el("span", { className: "wb-muted" }, [timeNode(draft.created_at)]));
    var body = [el("div", { className: "wb-draft-meta" }, meta)];
    if (state.editing[draft.id] !== undefined) {
      var area = el("textarea", { className: "wb-draft-edit", rows: "4", "aria-label": "编辑草稿 #" + draft.id });
      area.value = state.editing[draft.id];
      area.addEventListener("input", function () {
        state.editing[draft.id] = area.value;
      });
      body.push(area);
    } else {
      body.push(el("p", { className: "wb-draft-text", text: draftText(draft) }));
    }
    if (draft.reasons && draft.reasons.length) {
      body.push(el("p", { className: "wb-muted wb-draft-reasons", text: "理由：" + draft.reasons.join("；") }));
    }
    if (draft.error) body.push(el("p", { className: "wb-inline-error", text: draft.error }));
    if (draft.send_blocked_reason) {
      // Known before trying (WeCom's 48-hour window, its 5 replies per customer message): said on the card.
      body.push(
        el("p", {
          className: "wb-inline-error wb-draft-blocked",
          "data-send-blocked": String(draft.id),
          text: "暂不能发送：" + draft.send_blocked_reason,
        })
      );
    }
    var stale = generationStale(draft);
    if (draft.status === "generating") {
      body.push(
        el("p", { className: stale ? "wb-inline-error wb-draft-generating" : "wb-muted wb-draft-generating" }, [
          stale ? "生成似乎已中断（后台任务没有完成），可以重新生成。" : "模型正在生成回复…",
          " ",
          elapsedNode(draft),
        ])
      );
    }
    var actions = [];
    if (state.editing[draft.id] !== undefined) {
      actions.push(actionButton("保存并批准", "approve-edited", draft, "wb-button--primary"));
      actions.push(actionButton("取消", "cancel-edit", draft));
    } else if (draft.status === "pending") {
      actions.push(actionButton("批准", "approve", draft, "wb-button--primary"));
      actions.push(actionButton("编辑", "edit", draft));
      actions.push(actionButton("拒绝", "reject", draft, "wb-button--danger"));
    } else if (draft.status === "failed") {
      // No usable reply from the model: nothing to approve; generate again (it replaces this card) or dismiss it.
      actions.push(actionButton("重新生成", "regenerate", draft, "wb-button--primary"));
      actions.push(actionButton("忽略", "reject", draft));
    } else if (stale) {
      actions.push(actionButton("重新生成", "regenerate", draft, "wb-button--primary"));
    } else if (draft.status === "approved") {
      actions.push(actionButton("发送", "send", draft, "wb-button--primary"));
      actions.push(actionButton("编辑", "edit", draft));
      actions.push(actionButton("拒绝", "reject", draft, "wb-button--danger"));
    }
    draftActions.forEach(function (extra) {
      if (extra.available(draft)) {
        actions.push(
          el("button", {
            type: "button",
            className: "wb-button wb-button--quiet",
            "data-action": extra.action,
            "data-draft": String(draft.id),
            text: extra.label,
            onclick: function (event) {
              extra.run(draft, event.currentTarget);
            },
          })
        );
      } else if (extra.unavailableText) {
        actions.push(el("span", { className: "wb-muted wb-draft-note", "data-action-unavailable": extra.action, text: extra.unavailableText }));
      }
    });
    var delivery = draft.delivery;
    if (delivery) {
      var deliveryText =
        delivery.status_label +
        " " +
        formatTime(delivery.sent_at || delivery.created_at) +
        (delivery.upstream_id ? " · 上游 " + delivery.upstream_id : "") +
        (delivery.last_error ? " · " + delivery.last_error : "");
      body.push(el("p", { className: delivery.status === "failed" ? "wb-inline-error" : "wb-muted", text: deliveryText }));
    }
    body.push(el("div", { className: "wb-draft-actions" }, actions));
    body.push(el("p", { className: "wb-inline-error", "data-draft-error": String(draft.id), hidden: true }));
    return el(
      "li",
      {
        className: "wb-draft wb-draft--" + draft.status,
        "data-draft": String(draft.id),
        "data-status": draft.status,
        "data-stale": stale ? "1" : null,
      },
      body
    );
  }

  function draftError(draftId, message) {
    var node = document.querySelector("[data-draft-error='" + draftId + "']");
    if (node) {
      node.hidden = !message;
      node.textContent = message || "";
    }
    showError(message);
  }

  function currentDrafts() {
    return (state.overview && state.overview.drafts) || [];
  }

  function runDraftAction(action, draft, button) {
    if (action === "edit") {
      state.editing[draft.id] = draftText(draft);
      renderDrafts(currentDrafts());
      var area = document.querySelector("li[data-draft='" + draft.id + "'] textarea");
      if (area) area.focus();
      return Promise.resolve();
    }
    if (action === "cancel-edit") {
      delete state.editing[draft.id];
      renderDrafts(currentDrafts());
      return Promise.resolve();
    }
    var pending;
    var label;
    if (action === "approve") {
      label = "批准失败";
      pending = api("POST", accountUrl("drafts/" + draft.id + "/approve/"), {});
    } else if (action === "approve-edited") {
      label = "保存失败";
      var text = (state.editing[draft.id] || "").trim();
      if (!text) {
        draftError(draft.id, "草稿内容不能为空");
        return Promise.resolve();
      }
      pending = api("POST", accountUrl("drafts/" + draft.id + "/approve/"), { text: text, reason: "客服在智能会话中编辑后批准" });
    } else if (action === "reject") {
      label = "拒绝失败";
      pending = api("POST", accountUrl("drafts/" + draft.id + "/reject/"), { reason: "客服在智能会话中拒绝" });
    } else if (action === "regenerate") {
      label = "重新生成失败";
      pending = requestGeneration(true);
    } else if (action === "send") {
      if (sendBlockedReason()) {
        draftError(draft.id, sendBlockedReason());
        return Promise.resolve();
      }
      label = "发送失败";
      pending = sendDraft(draft.id);
    } else {
      return Promise.resolve();
    }
    // Busy survives a re-render by the live refresh, so the action cannot be clicked twice.
    state.busy[draft.id] = action;
    button.disabled = true;
    button.setAttribute("data-busy", "1");
    return pending
      .then(function () {
        delete state.busy[draft.id];
        delete state.editing[draft.id];
        showError("");
        return refreshAll();
      })
      .catch(function (error) {
        delete state.busy[draft.id];
        if (error instanceof ApiError && error.code === "upstream_unavailable") setUpstream("offline", error.detail);
        renderDrafts(currentDrafts());
        draftError(draft.id, errorText(label, error));
      });
  }

  function sendDraft(draftId) {
    return api("POST", accountUrl("drafts/" + draftId + "/send/"), {});
  }

  /** Ask for a draft (the Workbench's endpoint answers at once with the 生成中 draft). */
  function requestGeneration(regenerate) {
    var url = conversationUrl(state.account, state.conversation, "drafts/");
    return api("POST", url, regenerate ? { regenerate: true } : {});
  }

  function generateDraft() {
    if (!state.conversation) return Promise.resolve();
    state.generating = true;
    applyGenerateState();
    return requestGeneration(false)
      .then(function () {
        showError("");
        return refreshAll();
      })
      .catch(function (error) {
        if (error instanceof ApiError && error.code === "already_answered") {
          // The latest message was answered already: say so, and offer to draft another reply anyway.
          var answered = state.conversation;
          showError(errorText("生成草稿失败", error), {
            name: "regenerate",
            label: "重新生成",
            run: function () {
              // Only for the conversation the refusal was about.
              if (state.conversation === answered) regenerateDraft();
              else showError("");
            },
          });
          return;
        }
        showError(errorText("生成草稿失败", error));
      })
      .then(function () {
        state.generating = false;
        applyGenerateState();
      });
  }

  function regenerateDraft() {
    if (!state.conversation) return Promise.resolve();
    state.generating = true;
    applyGenerateState();
    return requestGeneration(true)
      .then(function () {
        showError("");
        return refreshAll();
      })
      .catch(function (error) {
        showError(errorText("重新生成失败", error));
      })
      .then(function () {
        state.generating = false;
        applyGenerateState();
      });
  }

  /**
   * One more control on every draft (e.g. 查看提示词), from a panel script: `available(draft)` says
   * whether the button shows; otherwise `unavailableText`, if given, says why not.
   */
  function registerDraftAction(extra) {
    draftActions.push({
      action: extra.action,
      label: extra.label,
      run: extra.run,
      unavailableText: extra.unavailableText || "",
      available:
        extra.available ||
        function () {
          return true;
        },
    });
    if (state.overview) renderDrafts(currentDrafts());
  }

  // --- start-up -------------------------------------------------------------------------

  /** The page's configuration from the server (time zone, choices, admin links for staff). */
  function pageConfig() {
    if (config === null) config = readJson("wb-config", {});
    return config;
  }

  function readJson(id, fallback) {
    var node = $(id);
    if (!node) return fallback;
    try {
      return JSON.parse(node.textContent) || fallback;
    } catch (e) {
      return fallback;
    }
  }

  // Whether a model is connected (GET /api/model-status): a banner with what to do when not.
  function checkModel() {
    return request("GET", "/api/model-status", { timeoutMs: 8000 })
      .then(function (result) {
        var data = result.data || {};
        var banner = $("wb-model-banner");
        banner.hidden = data.ok === true;
        banner.setAttribute("data-state", data.state || "unknown");
        $("wb-model-title").textContent = data.title || "";
        $("wb-model-action").textContent = data.action || "";
      })
      .catch(function () {
        /* the model banner is advice: a failed check leaves it hidden */
      });
  }

  function initialAccounts() {
    // The page embeds the server's list (same local request); the per-origin copy is the fallback.
    var embedded = readJson("wb-initial-accounts", []);
    return embedded.length ? embedded : storedAccounts() || [];
  }

  var started = false;

  function start() {
    if (started) return;
    started = true;
    var settings = pageConfig();
    if (Qiwei.time) Qiwei.time.configure({ timeZone: settings.time_zone, utcOffsetMinutes: settings.utc_offset_minutes });
    state.accounts = initialAccounts();
    var bound = storeGet(STORE_ACCOUNT) || "";
    if (state.accounts.length && !knownAccount(bound)) bound = state.accounts[0].id;
    state.account = bound;
    storeSet(STORE_ACCOUNTS, JSON.stringify(state.accounts));
    renderAccounts();
    applySendState();
    $("wb-account-select").addEventListener("change", function (event) {
      bindAccount(event.target.value);
    });
    $("wb-generate-draft").addEventListener("click", generateDraft);

    // (a) local data first; (b) the status probe runs beside it, never before it.
    if (state.account) {
      storeSet(STORE_ACCOUNT, state.account);
      loadConversations();
    }
    checkStatus();
    checkModel();
    // (c) complete the binding in the background; (d) keep the page live.
    refreshAccounts();
    startLive();
    window.setInterval(checkStatus, STATUS_REFRESH_MS);
    window.setInterval(tickElapsed, 1000);
  }

  global.QiweiWorkbench = {
    state: state,
    reload: loadOverview,
    refresh: refreshAll,
    sendDraft: sendDraft,
    checkStatus: checkStatus,
    registerPanel: registerPanel,
    registerDraftAction: registerDraftAction,
    config: pageConfig,
    live: function () {
      return poller;
    },
    ui: {
      $: $,
      el: el,
      clear: clear,
      formatTime: formatTime,
      timeNode: timeNode,
      renderSimpleList: renderSimpleList,
      api: api,
      accountUrl: accountUrl,
      ApiError: ApiError,
      showError: showError,
      errorText: errorText,
    },
  };

  // Deferred panel scripts after this one run before DOMContentLoaded: start once they registered.
  if (document.readyState === "complete") start();
  else {
    document.addEventListener("DOMContentLoaded", start);
    window.addEventListener("load", start);
  }
})(window);
