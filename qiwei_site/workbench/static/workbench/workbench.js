/*
 * 智能会话 (spec §9): offline-first start-up.
 * 1. Load local conversations, memory, tasks and audit for the account bound in this origin's
 *    localStorage at once; 2. read /api/status?fast=true with a 2.5 s cap; 3. refresh the account
 *    binding in the background; 4. when the upstream is down or unknown, only sending is disabled.
 * Local loading never waits for the status call.
 */
(function () {
  "use strict";

  var STORE_ACCOUNT = "qiwei.account";
  var STORE_ACCOUNTS = "qiwei.accounts";
  var STORE_CONVERSATION = "qiwei.conversation.";
  var STATUS_URL = "/api/status?fast=true";
  var STATUS_TIMEOUT_MS = 2500;
  var STATUS_REFRESH_MS = 30000;
  var SESSION_MODES = { manual: "人工模式", assisted: "辅助模式", auto: "自动模式" };

  var state = {
    accounts: [],
    account: "",
    conversation: "",
    overview: null,
    loadSeq: 0,
    editing: {},
    upstream: { state: "checking", reason: "正在检查企微连接" },
  };

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

  function api(method, url, body, signal) {
    var headers = { Accept: "application/json" };
    if (method !== "GET") {
      headers["Content-Type"] = "application/json";
      headers["X-CSRFToken"] = csrfToken();
    }
    return fetch(url, {
      method: method,
      headers: headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: signal,
    }).then(function (response) {
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
        return data;
      });
    });
  }

  function accountUrl(path) {
    return "/api/accounts/" + encodeURIComponent(state.account) + "/" + path;
  }

  function showError(message) {
    var box = $("wb-error");
    if (!message) {
      box.hidden = true;
      box.textContent = "";
      return;
    }
    box.hidden = false;
    box.textContent = message;
  }

  function errorText(prefix, error) {
    if (error instanceof ApiError) return prefix + "：" + error.detail;
    return prefix + "：" + (error && error.message ? error.message : "网络错误");
  }

  function formatTime(value) {
    if (!value) return "";
    var date = new Date(value);
    if (isNaN(date.getTime())) return value;
    return date.toLocaleString("zh-CN", {
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      hour12: false,
    });
  }

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
    state.overview = null;
    renderAccounts();
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
          storeSet(STORE_ACCOUNT, "");
          clearCustomer();
          clear($("wb-conversation-list"));
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

  function checkStatus() {
    var controller = typeof AbortController === "function" ? new AbortController() : null;
    var timer = setTimeout(function () {
      if (controller) controller.abort();
    }, STATUS_TIMEOUT_MS);
    return api("GET", STATUS_URL, undefined, controller ? controller.signal : undefined)
      .then(function (data) {
        data = data || {};
        var extra = data.subscription ? "订阅：" + data.subscription : "";
        if (data.online === true && data.logged_in !== false) setUpstream("online", "", extra);
        else if (data.online === true) setUpstream("offline", "企微账号未登录");
        else if (data.online === false) setUpstream("offline", data.detail || "上游网关不可达");
        else setUpstream("unknown", "连接状态未知");
      })
      .catch(function (error) {
        if (error && error.name === "AbortError") setUpstream("unknown", "状态检查超时（2.5 秒）");
        else if (error instanceof ApiError) setUpstream("unknown", "状态接口不可用（" + error.detail + "）");
        else setUpstream("unknown", "无法读取连接状态");
      })
      .then(function () {
        clearTimeout(timer);
      });
  }

  // --- conversations --------------------------------------------------------------------

  function loadConversations() {
    var account = state.account;
    if (!account) return Promise.resolve();
    return api("GET", "/workbench/api/accounts/" + encodeURIComponent(account) + "/conversations/")
      .then(function (data) {
        if (account !== state.account) return;
        var items = (data && data.results) || [];
        renderConversations(items);
        var remembered = storeGet(STORE_CONVERSATION + account);
        var pick = items.some(function (c) {
          return c.conversation_id === remembered;
        })
          ? remembered
          : items.length
            ? items[0].conversation_id
            : "";
        if (pick) selectConversation(pick);
        else clearCustomer();
      })
      .catch(function (error) {
        if (account === state.account) showError(errorText("会话列表加载失败", error));
      });
  }

  function renderConversations(items) {
    var list = $("wb-conversation-list");
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
          el("span", { className: "wb-conversation-time", text: formatTime(item.last_message_at) }),
          el("span", { className: "wb-conversation-preview", text: preview }),
          el("span", { className: "wb-conversation-badges" }, badges),
        ]
      );
      list.appendChild(el("li", {}, [button]));
    });
  }

  function markSelected() {
    Array.prototype.forEach.call(document.querySelectorAll(".wb-conversation"), function (button) {
      if (button.getAttribute("data-conversation") === state.conversation) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
    });
  }

  function selectConversation(conversationId) {
    state.conversation = conversationId;
    storeSet(STORE_CONVERSATION + state.account, conversationId);
    state.editing = {};
    markSelected();
    return loadOverview();
  }

  function loadOverview() {
    var account = state.account;
    var conversation = state.conversation;
    if (!account || !conversation) return Promise.resolve();
    var seq = ++state.loadSeq;
    var url =
      "/workbench/api/accounts/" +
      encodeURIComponent(account) +
      "/conversations/" +
      encodeURIComponent(conversation) +
      "/overview/";
    return api("GET", url)
      .then(function (data) {
        if (seq !== state.loadSeq) return;
        state.overview = data;
        renderOverview(data);
      })
      .catch(function (error) {
        if (seq === state.loadSeq) showError(errorText("会话加载失败", error));
      });
  }

  function clearCustomer() {
    $("wb-customer-name").textContent = "请选择会话";
    $("wb-customer-meta").textContent = "";
    ["wb-messages", "wb-drafts", "wb-profile", "wb-tasks", "wb-alerts", "wb-audit"].forEach(function (id) {
      clear($(id));
    });
    $("wb-snapshot").textContent = "暂无快照。";
    $("wb-snapshot-version").textContent = "";
    $("wb-generate-draft").disabled = true;
  }

  // --- rendering one customer -----------------------------------------------------------

  function renderOverview(data) {
    var customer = data.customer;
    $("wb-customer-name").textContent = customer.display_name || customer.conversation_id;
    $("wb-customer-meta").textContent =
      "会话 " +
      customer.conversation_id +
      " · " +
      (SESSION_MODES[customer.session_mode] || customer.session_mode) +
      (customer.auto_send_whitelisted ? " · 自动发送白名单" : "");
    $("wb-generate-draft").disabled = false;
    renderMessages(data.messages);
    renderDrafts(data.drafts);
    renderProfile(data.profile);
    renderSimpleList($("wb-tasks"), data.tasks, "暂无待办。", function (task) {
      return el("li", {}, [task.title, task.due_at ? el("span", { className: "wb-muted", text: " · 截止 " + formatTime(task.due_at) }) : null]);
    });
    renderSimpleList($("wb-alerts"), data.alerts, "暂无预警。", function (alert) {
      return el("li", { className: "wb-alert wb-alert--" + alert.level }, [
        el("span", { className: "wb-badge", text: alert.level_label }),
        " " + alert.text,
      ]);
    });
    var snapshot = data.snapshot;
    $("wb-snapshot").textContent = snapshot ? snapshot.content || "（快照为空）" : "暂无快照。";
    $("wb-snapshot-version").textContent = snapshot ? "v" + snapshot.version + " · " + snapshot.char_count + " 字" : "";
    if (data.memory_admin_url) $("wb-memory-admin").setAttribute("href", data.memory_admin_url);
    renderSimpleList($("wb-audit"), data.audit, "暂无审计记录。", function (event) {
      return el("li", {}, [
        el("span", { className: "wb-audit-time", text: formatTime(event.created_at) }),
        el("code", { text: event.action }),
        " " + (event.actor_name || "system"),
        event.reason ? el("span", { className: "wb-muted", text: " · " + event.reason }) : null,
      ]);
    });
    // After the drafts are laid out, so the newest message is really in view.
    scrollToNewest();
    window.requestAnimationFrame(scrollToNewest);
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

  function renderMessages(messages) {
    var list = $("wb-messages");
    clear(list);
    if (!messages.length) list.appendChild(el("li", { className: "wb-muted", text: "暂无消息。" }));
    messages.forEach(function (message) {
      var who = message.direction === "inbound" ? "客户" : message.direction === "outbound" ? "客服" : "系统";
      list.appendChild(
        el("li", { className: "wb-message wb-message--" + message.direction, "data-direction": message.direction }, [
          el("div", { className: "wb-message-meta" }, [
            el("span", { className: "wb-message-who", text: who + (message.sender ? " · " + message.sender : "") }),
            el("time", { datetime: message.sent_at, text: formatTime(message.sent_at) }),
          ]),
          el("p", { className: "wb-message-text", text: message.text }),
        ])
      );
    });
  }

  function scrollToNewest() {
    var list = $("wb-messages");
    list.scrollTop = list.scrollHeight;
  }

  function renderProfile(fields) {
    var list = $("wb-profile");
    clear(list);
    (fields || []).forEach(function (field) {
      list.appendChild(el("dt", { text: field.label }));
      list.appendChild(el("dd", { className: field.value ? "" : "wb-muted", text: field.value || "未填写" }));
    });
  }

  function draftText(draft) {
    return draft.final_text || draft.reply || "";
  }

  function renderDrafts(drafts) {
    var list = $("wb-drafts");
    clear(list);
    $("wb-drafts-empty").hidden = drafts.length > 0;
    drafts.forEach(function (draft) {
      list.appendChild(renderDraft(draft));
    });
    applySendState();
  }

  function actionButton(label, action, draft, extraClass) {
    return el("button", {
      type: "button",
      className: "wb-button " + (extraClass || ""),
      "data-action": action,
      "data-draft": String(draft.id),
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
    meta.push(el("span", { className: "wb-muted", text: formatTime(draft.created_at) }));
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
    var actions = [];
    if (state.editing[draft.id] !== undefined) {
      actions.push(actionButton("保存并批准", "approve-edited", draft, "wb-button--primary"));
      actions.push(actionButton("取消", "cancel-edit", draft));
    } else if (draft.status === "pending") {
      actions.push(actionButton("批准", "approve", draft, "wb-button--primary"));
      actions.push(actionButton("编辑", "edit", draft));
      actions.push(actionButton("拒绝", "reject", draft, "wb-button--danger"));
    } else if (draft.status === "approved") {
      actions.push(actionButton("发送", "send", draft, "wb-button--primary"));
      actions.push(actionButton("编辑", "edit", draft));
      actions.push(actionButton("拒绝", "reject", draft, "wb-button--danger"));
    }
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
    return el("li", { className: "wb-draft wb-draft--" + draft.status, "data-draft": String(draft.id), "data-status": draft.status }, body);
  }

  function draftError(draftId, message) {
    var node = document.querySelector("[data-draft-error='" + draftId + "']");
    if (node) {
      node.hidden = !message;
      node.textContent = message || "";
    }
    showError(message);
  }

  function runDraftAction(action, draft, button) {
    if (action === "edit") {
      state.editing[draft.id] = draftText(draft);
      renderDrafts(state.overview.drafts);
      var area = document.querySelector("li[data-draft='" + draft.id + "'] textarea");
      if (area) area.focus();
      return Promise.resolve();
    }
    if (action === "cancel-edit") {
      delete state.editing[draft.id];
      renderDrafts(state.overview.drafts);
      return Promise.resolve();
    }
    var request;
    var label;
    if (action === "approve") {
      label = "批准失败";
      request = api("POST", accountUrl("drafts/" + draft.id + "/approve/"), {});
    } else if (action === "approve-edited") {
      label = "保存失败";
      var text = (state.editing[draft.id] || "").trim();
      if (!text) {
        draftError(draft.id, "草稿内容不能为空");
        return Promise.resolve();
      }
      request = api("POST", accountUrl("drafts/" + draft.id + "/approve/"), { text: text, reason: "客服在智能会话中编辑后批准" });
    } else if (action === "reject") {
      label = "拒绝失败";
      request = api("POST", accountUrl("drafts/" + draft.id + "/reject/"), { reason: "客服在智能会话中拒绝" });
    } else if (action === "send") {
      if (sendBlockedReason()) {
        draftError(draft.id, sendBlockedReason());
        return Promise.resolve();
      }
      label = "发送失败";
      request = sendDraft(draft.id);
    } else {
      return Promise.resolve();
    }
    button.disabled = true;
    button.setAttribute("data-busy", "1");
    return request
      .then(function () {
        delete state.editing[draft.id];
        showError("");
        return loadOverview().then(loadConversationsQuietly);
      })
      .catch(function (error) {
        if (error instanceof ApiError && error.code === "upstream_unavailable") setUpstream("offline", error.detail);
        button.removeAttribute("data-busy");
        button.disabled = false;
        applySendState();
        draftError(draft.id, errorText(label, error));
      });
  }

  function sendDraft(draftId) {
    return api("POST", accountUrl("drafts/" + draftId + "/send/"), {});
  }

  function loadConversationsQuietly() {
    var account = state.account;
    return api("GET", "/workbench/api/accounts/" + encodeURIComponent(account) + "/conversations/")
      .then(function (data) {
        if (account === state.account) {
          renderConversations((data && data.results) || []);
          markSelected();
        }
      })
      .catch(function () {
        /* the list is a convenience; the overview already shows the result */
      });
  }

  function generateDraft() {
    var button = $("wb-generate-draft");
    if (!state.conversation) return Promise.resolve();
    button.disabled = true;
    button.textContent = "生成中…";
    return api("POST", accountUrl("conversations/" + encodeURIComponent(state.conversation) + "/drafts/"), {})
      .then(function () {
        showError("");
        return loadOverview().then(loadConversationsQuietly);
      })
      .catch(function (error) {
        showError(errorText("生成草稿失败", error));
      })
      .then(function () {
        button.disabled = !state.conversation;
        button.textContent = "生成草稿";
      });
  }

  // --- start-up -------------------------------------------------------------------------

  function initialAccounts() {
    // The page embeds the server's list (same local request); the per-origin copy is the fallback.
    var embedded = [];
    try {
      embedded = JSON.parse($("wb-initial-accounts").textContent) || [];
    } catch (e) {
      embedded = [];
    }
    return embedded.length ? embedded : storedAccounts() || [];
  }

  function start() {
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
    // (c) complete the binding in the background.
    refreshAccounts();
    window.setInterval(checkStatus, STATUS_REFRESH_MS);
  }

  window.QiweiWorkbench = {
    state: state,
    reload: loadOverview,
    sendDraft: sendDraft,
    checkStatus: checkStatus,
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
