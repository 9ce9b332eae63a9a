/*
 * 智能会话: 查看提示词 on every draft (issue 12, item 6). A dialog shows the prompt exactly as the
 * model received it (GET …/drafts/{id}/prompt/), split into its sections: each with its title,
 * characters against its budget, whether and what the budget trimmed, its text, and links to the
 * memory items, messages and business rows it quotes. Messages and business rows on the page are
 * shown in place (scrolled to and highlighted); staff also get the admin page of each. Every text
 * goes in through textContent.
 */
(function (global) {
  "use strict";

  var WB = global.QiweiWorkbench;
  if (!WB) return;
  var ui = WB.ui;
  var el = ui.el;

  var SCOPES = {
    instructions: "系统说明",
    core_memory: "核心记忆",
    business_state: "业务状态",
    conversation: "对话（召回历史、最近对话、最新消息三段共用）",
    whole: "整个提示词",
  };
  var DIRECTIONS = { inbound: "客户消息", outbound: "客服消息", system: "系统消息" };
  var BUSINESS = { task: "待办", alert: "预警", recommendation: "推荐" };
  var HIGHLIGHT_MS = 4000;

  var opener = null; // {draft} of the button that opened the dialog, to give the focus back
  var sequence = 0;

  function dialog() {
    return ui.$("wb-prompt-dialog");
  }

  function adminUrl(kind, id) {
    var config = WB.config ? WB.config() : {};
    var template = config.admin_urls && config.admin_urls[kind];
    if (!template) return "";
    var page = template.replace("__id__", encodeURIComponent(String(id)));
    // Ids are per account: open the page through the admin's account chooser, so the link never
    // lands on another account's row with the same id.
    if (!config.admin_open_url) return page;
    return config.admin_open_url + "?account_id=" + encodeURIComponent(WB.state.account) +
      "&next=" + encodeURIComponent(page);
  }

  function adminLink(kind, id, label) {
    var url = adminUrl(kind, id);
    if (!url) return null;
    return el("a", {
      href: url,
      target: "_blank",
      rel: "noopener",
      className: "wb-prompt-admin",
      "data-admin": kind,
      title: "在记忆后台打开（账号 " + WB.state.account + "）",
      text: label,
    });
  }

  /** Close the dialog and show `target` on the page: scrolled into view, highlighted, focused. */
  function showOnPage(target) {
    var node = typeof target === "function" ? target() : target;
    if (!node) return false;
    close();
    node.classList.add("wb-highlight");
    if (!node.hasAttribute("tabindex")) node.setAttribute("tabindex", "-1");
    node.scrollIntoView({ block: "center" });
    node.focus({ preventScroll: true });
    window.setTimeout(function () {
      node.classList.remove("wb-highlight");
    }, HIGHLIGHT_MS);
    return true;
  }

  /** A reference: shown in place when it is on the page, else its admin page (staff), else its id. */
  function reference(label, kind, id, find) {
    var parts = [];
    if (find()) {
      parts.push(
        el("button", {
          type: "button",
          className: "wb-link-button wb-prompt-ref",
          "data-ref": kind,
          "data-id": String(id),
          title: "在页面中查看",
          text: label,
          onclick: function () {
            if (!showOnPage(find)) ui.showError(label + " 已不在页面上");
          },
        })
      );
      var admin = adminLink(kind, id, "后台");
      if (admin) parts.push(" ", admin);
    } else {
      parts.push(adminLink(kind, id, label) || el("span", { className: "wb-prompt-ref", "data-ref": kind, "data-id": String(id), title: "不在页面上", text: label }));
    }
    return el("li", { className: "wb-prompt-ref-item" }, parts);
  }

  function memoryRef(item) {
    var label = "记忆条目 #" + item.id + (item.type_label ? "（" + item.type_label + "）" : "");
    var link = adminLink("memory_item", item.id, label);
    return el("li", { className: "wb-prompt-ref-item" }, [
      link || el("span", { className: "wb-prompt-ref", "data-ref": "memory_item", "data-id": String(item.id), text: label }),
    ]);
  }

  function messageRef(message) {
    return reference((DIRECTIONS[message.direction] || "消息") + " #" + message.id, "message", message.id, function () {
      return document.querySelector("#wb-messages li[data-message='" + message.id + "']");
    });
  }

  function businessRef(row) {
    return reference((BUSINESS[row.kind] || row.kind) + " #" + row.id, row.kind, row.id, function () {
      return document.querySelector("#wb-business li[data-" + row.kind + "='" + row.id + "']");
    });
  }

  function budgetText(section) {
    if (section.budget === null || section.budget === undefined) return "不设上限";
    var text = "预算 " + section.budget + " 字";
    if (section.budget_scope && section.budget_scope !== section.key) {
      text += "（" + (SCOPES[section.budget_scope] || section.budget_scope) + "）";
    }
    return text;
  }

  function trimmedText(section) {
    if (!section.trimmed) return "未截断";
    var dropped = (section.trimmed_ids || []).length + (section.left_out || []).length;
    return dropped ? "已截断（删去 " + dropped + " 项）" : "已截断";
  }

  function sectionId(section) {
    return "wb-prompt-section-" + section.key;
  }

  function summaryTable(sections) {
    var rows = sections.map(function (section) {
      return el("tr", { "data-section": section.key }, [
        el("th", { scope: "row" }, [
          el("a", {
            href: "#" + sectionId(section),
            text: section.title,
            onclick: function (event) {
              event.preventDefault();
              var target = document.getElementById(sectionId(section));
              if (target) {
                target.scrollIntoView({ block: "start" });
                target.focus({ preventScroll: true });
              }
            },
          }),
        ]),
        el("td", { className: "wb-num", "data-cell": "chars", text: String(section.chars) }),
        el("td", { "data-cell": "budget", text: budgetText(section) }),
        el("td", { "data-cell": "trimmed", className: section.trimmed ? "wb-prompt-trimmed" : "wb-muted", text: trimmedText(section) }),
      ]);
    });
    return el("table", { className: "wb-prompt-table" }, [
      el("caption", { text: "各段字数与预算" }),
      el("thead", {}, [el("tr", {}, [el("th", { scope: "col", text: "段落" }), el("th", { scope: "col", text: "字数" }), el("th", { scope: "col", text: "预算" }), el("th", { scope: "col", text: "截断" })])]),
      el("tbody", {}, rows),
    ]);
  }

  function refList(title, items, render) {
    if (!items.length) return null;
    return el("div", { className: "wb-prompt-refs" }, [el("span", { className: "wb-muted", text: title + "：" }), el("ul", {}, items.map(render))]);
  }

  function trimmedRefs(section, view) {
    var ids = section.trimmed_ids || [];
    if (!ids.length) return null;
    var render =
      section.key === "core_memory"
        ? function (id) {
            return memoryRef({ id: id, type_label: "" });
          }
        : function (id) {
            return messageRef({ id: id, direction: "" });
          };
    return refList("因预算删去", ids, render);
  }

  function sectionNode(section, view) {
    var text = view.prompt.slice(section.start, section.end);
    var headingId = "wb-prompt-h-" + ++sequence;
    var stats = [
      el("span", { "data-stat": "chars", text: section.chars + " 字" }),
      " · ",
      el("span", { "data-stat": "budget", text: budgetText(section) }),
    ];
    if (section.trimmed) stats.push(" · ", el("span", { className: "wb-badge wb-badge--alert", "data-stat": "trimmed", text: "已截断" }));
    var children = [
      el("h3", { id: headingId, className: "wb-prompt-section-title", "data-section": section.key, text: section.title }),
      el("p", { className: "wb-prompt-stats" }, stats),
      trimmedRefs(section, view),
      section.left_out && section.left_out.length
        ? el("p", { className: "wb-prompt-left-out" }, [el("span", { className: "wb-muted", text: "因预算省略的知识库段落：" }), section.left_out.join("、")])
        : null,
      text
        ? el("pre", { className: "wb-prompt-text", text: text })
        : el("p", { className: "wb-muted", text: "（本段内容因预算全部删去）" }),
      refList(
        "引用的记忆条目",
        view.memory_items.filter(function (item) {
          return item.section === section.key;
        }),
        memoryRef
      ),
      refList(
        "引用的消息",
        view.messages.filter(function (message) {
          return message.section === section.key;
        }),
        messageRef
      ),
      refList(
        "引用的业务状态",
        view.business.filter(function (row) {
          return row.section === section.key;
        }),
        businessRef
      ),
    ];
    return el("section", { className: "wb-prompt-section", id: sectionId(section), "data-section": section.key, tabindex: "-1", "aria-labelledby": headingId }, children);
  }

  function render(view) {
    var root = ui.$("wb-prompt-body");
    ui.clear(root);
    ui.$("wb-prompt-title").textContent = "模型收到的提示词 · 草稿 #" + view.draft_id;
    if (!view.available) {
      root.appendChild(el("p", { className: "wb-muted", "data-prompt-state": "unavailable", text: "该草稿生成时尚未保存提示词（旧草稿）。" }));
      return;
    }
    var facts = [el("span", { "data-prompt-chars": String(view.prompt_chars), text: "共 " + view.prompt_chars + " 字" })];
    if (view.snapshot_version !== null && view.snapshot_version !== undefined) facts.push(" · 核心记忆快照 v" + view.snapshot_version);
    facts.push(" · " + view.sections.length + " 段");
    var notes = [];
    if (view.fallback) notes.push(el("p", { className: "wb-send-reason", text: "生成时记忆不可用，模型只收到了最小上下文。" }));
    if (view.redacted) notes.push(el("p", { className: "wb-send-reason", text: "因遗忘操作，其中对已遗忘内容的引用已替换为标记；下列文字和字数均为替换后的。" }));
    root.appendChild(el("p", { className: "wb-prompt-facts" }, facts));
    notes.forEach(function (note) {
      root.appendChild(note);
    });
    root.appendChild(summaryTable(view.sections));
    view.sections.forEach(function (section) {
      root.appendChild(sectionNode(section, view));
    });
    root.appendChild(
      el("details", { className: "wb-prompt-whole" }, [
        el("summary", { text: "完整提示词原文（" + view.prompt_chars + " 字）" }),
        el("pre", { className: "wb-prompt-text", "data-prompt-whole": "1", text: view.prompt }),
      ])
    );
  }

  var loading = 0;

  function open(draft) {
    var box = dialog();
    if (!box) return Promise.resolve();
    var mine = ++loading;
    opener = { draft: draft.id };
    ui.$("wb-prompt-title").textContent = "模型收到的提示词 · 草稿 #" + draft.id;
    var root = ui.$("wb-prompt-body");
    ui.clear(root);
    root.appendChild(el("p", { className: "wb-muted", role: "status", text: "正在加载提示词…" }));
    box.setAttribute("data-draft", String(draft.id));
    if (!box.open) {
      if (typeof box.showModal === "function") box.showModal();
      else box.setAttribute("open", "");
    }
    return ui.api("GET", ui.accountUrl("drafts/" + draft.id + "/prompt/")).then(
      function (view) {
        if (mine !== loading) return;
        render(view);
        box.setAttribute("data-loaded", "1");
      },
      function (error) {
        if (mine !== loading) return;
        ui.clear(root);
        root.appendChild(el("p", { className: "wb-inline-error", role: "alert", text: ui.errorText("提示词加载失败", error) }));
      }
    );
  }

  function close() {
    var box = dialog();
    if (box && box.open) {
      if (typeof box.close === "function") box.close();
      else box.removeAttribute("open");
    }
  }

  function onClosed() {
    var box = dialog();
    box.removeAttribute("data-loaded");
    loading += 1;
    var was = opener;
    opener = null;
    // Back to the button that opened it, unless the dialog handed the focus to the page.
    if (!was || (document.activeElement && document.activeElement !== document.body && !box.contains(document.activeElement))) return;
    var button = document.querySelector("#wb-drafts button[data-action='prompt'][data-draft='" + was.draft + "']");
    if (button) button.focus();
  }

  function setUp() {
    var box = dialog();
    if (!box) return;
    ui.$("wb-prompt-close").addEventListener("click", close);
    box.addEventListener("close", onClosed);
    // A click on the backdrop (outside the dialog's box) closes it too.
    box.addEventListener("click", function (event) {
      if (event.target === box) close();
    });
  }

  setUp();
  WB.registerDraftAction({
    action: "prompt",
    label: "查看提示词",
    available: function (draft) {
      return !!draft.prompt_available;
    },
    unavailableText: "未保存提示词",
    run: function (draft) {
      open(draft);
    },
  });

  WB.prompt = { open: open, close: close };
})(window);
