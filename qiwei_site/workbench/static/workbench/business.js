/*
 * 智能会话: the 业务 panel (spec §2 结构化业务状态). The open customer's open tasks (待办), alerts
 * (预警) and recommendations (推荐, with their feedback), from the overview; an agent resolves any
 * of them with a reason, records feedback on a recommendation, or adds a task, each through the
 * account API (conversations.apis), which audits it. Errors are the API's own Chinese detail.
 *
 * Forms are small inline <form>s whose state lives here, not in the DOM: a live refresh that
 * arrives while the focus is in one of them is held back until the focus leaves it (so typing,
 * and a Chinese IME composition, are never interrupted), and any redraw puts back what was typed.
 */
(function (global) {
  "use strict";

  var WB = global.QiweiWorkbench;
  if (!WB) return;
  var ui = WB.ui;
  var el = ui.el;

  // Field names in the API's error details, as an agent reads them.
  var FIELD_LABELS = {
    reason: "原因",
    title: "待办标题",
    note: "说明",
    due_at: "截止时间",
    source: "反馈方",
    verdict: "反馈结论",
    comment: "反馈内容",
    text: "内容",
    non_field_errors: "",
  };
  var KINDS = {
    task: { group: "tasks", path: "tasks/", resolveLabel: "完成", formLabel: "完成待办", reasonLabel: "完成原因", submit: "确认完成", placeholder: "如：已电话确认周六带看" },
    alert: { group: "alerts", path: "alerts/", resolveLabel: "处理", formLabel: "处理预警", reasonLabel: "处理原因", submit: "确认处理", placeholder: "如：已向客户说明押金退还流程" },
    recommendation: { group: "recommendations", path: "recommendations/", resolveLabel: "结束", formLabel: "结束推荐", reasonLabel: "结束原因", submit: "确认结束", placeholder: "如：客户已签约其他房源" },
  };

  var forms = {}; // form key → {values, busy, error}
  var unfolded = {}; // recommendation id → its feedback history is unfolded
  var latest = null; // the slice last given to the panel
  var drawnFor = null; // the conversation the panel shows
  var stale = false; // a refresh waits for the focus to leave a form
  var sequence = 0; // ids for labels and error messages

  function body() {
    return ui.$("wb-business-body");
  }

  function choices(name) {
    var config = WB.config ? WB.config() : {};
    return (config.choices && config.choices[name]) || [];
  }

  /** The API's detail, with the field names it starts with said in Chinese. */
  function errorMessage(error) {
    if (error && error.detail) {
      return String(error.detail).replace(/(^|; )([a-z_]+): /g, function (whole, separator, field) {
        if (!(field in FIELD_LABELS)) return whole;
        return separator + (FIELD_LABELS[field] ? FIELD_LABELS[field] + "：" : "");
      });
    }
    return "网络错误，请稍后重试";
  }

  /** A `datetime-local` value ("2026-12-05T10:00"), read in the page's zone, as ISO 8601 with its offset. */
  function dueAtValue(local) {
    if (!local) return null;
    var config = WB.config ? WB.config() : {};
    var minutes = typeof config.utc_offset_minutes === "number" ? config.utc_offset_minutes : 480;
    var sign = minutes < 0 ? "-" : "+";
    var abs = Math.abs(minutes);
    var pad = function (n) {
      return (n < 10 ? "0" : "") + n;
    };
    var seconds = local.length === 16 ? ":00" : "";
    return local + seconds + sign + pad(Math.floor(abs / 60)) + ":" + pad(abs % 60);
  }

  // --- focus: kept across redraws, and a redraw held back while typing ------------------------

  function typing() {
    var active = document.activeElement;
    return !!(active && body() && body().contains(active) && active.closest("form[data-form]"));
  }

  function focusNow() {
    var active = document.activeElement;
    var root = body();
    if (!active || !root || !root.contains(active)) return null;
    var owner = active.closest("[data-key]");
    return {
      key: owner ? owner.getAttribute("data-key") : null,
      field: active.getAttribute("data-field"),
      action: active.getAttribute("data-action"),
      start: active.selectionStart,
      end: active.selectionEnd,
    };
  }

  function focusBack(focus) {
    if (!focus || !focus.key) return;
    var owner = body().querySelector("[data-key='" + focus.key + "']");
    if (!owner) return;
    var target = focus.field
      ? owner.querySelector("[data-field='" + focus.field + "']")
      : focus.action
        ? owner.querySelector("[data-action='" + focus.action + "']")
        : null;
    if (!target) return;
    target.focus({ preventScroll: true });
    if (typeof focus.start === "number" && target.setSelectionRange) {
      try {
        target.setSelectionRange(focus.start, focus.end);
      } catch (e) {
        /* not every input type keeps a selection */
      }
    }
  }

  function focusTarget(key, selector) {
    var owner = body().querySelector("[data-key='" + key + "']");
    var target = owner ? owner.querySelector(selector) : null;
    if (target) target.focus();
  }

  function flush() {
    if (stale && latest && !typing()) draw(latest);
  }

  // --- drawing --------------------------------------------------------------------------------

  function draw(slice) {
    var root = body();
    if (!root) return;
    var focus = focusNow();
    stale = false;
    ui.clear(root);
    root.appendChild(taskGroup(slice.tasks || []));
    root.appendChild(alertGroup(slice.alerts || []));
    root.appendChild(recommendationGroup(slice.recommendations || []));
    focusBack(focus);
  }

  function group(kind, title, count, extra, list) {
    var heading = el("h4", { className: "wb-biz-heading", id: "wb-biz-" + kind + "-title", tabindex: "-1" }, [
      title + " ",
      el("span", { className: "wb-badge", "data-count": kind, text: String(count) }),
    ]);
    return el("section", { className: "wb-biz-group", "data-group": kind, "aria-labelledby": "wb-biz-" + kind + "-title" }, [
      el("div", { className: "wb-biz-head" }, [heading].concat(extra || [])),
      list,
    ]);
  }

  function list(id, items, empty, render) {
    var node = el("ul", { id: id, className: "wb-list wb-biz-list" });
    ui.renderSimpleList(node, items, empty, render);
    return node;
  }

  function meta(parts) {
    var children = [];
    parts.forEach(function (part) {
      if (!part) return;
      if (children.length) children.push(" · ");
      children.push(part);
    });
    return children.length ? el("div", { className: "wb-biz-meta wb-muted" }, children) : null;
  }

  function labelled(label, value) {
    return value ? el("span", {}, [label + " ", ui.timeNode(value)]) : null;
  }

  function button(label, action, onclick, extraClass) {
    return el("button", {
      type: "button",
      className: "wb-button wb-button--small " + (extraClass || ""),
      "data-action": action,
      text: label,
      onclick: onclick,
    });
  }

  function openForm(key, values, focusSelector) {
    forms[key] = { values: values, busy: false, error: "" };
    draw(latest);
    focusTarget(key, focusSelector || "[data-field]");
  }

  function closeForm(key, focusSelector) {
    delete forms[key];
    draw(latest);
    if (focusSelector) focusTarget(key.split(":").slice(0, 2).join(":"), focusSelector);
  }

  // --- tasks ----------------------------------------------------------------------------------

  function taskGroup(tasks) {
    var addKey = "task:new";
    var extra = [];
    if (!forms[addKey]) {
      extra.push(
        el("span", { "data-key": "task:add" }, [
          button("新建待办", "add", function () {
            openForm(addKey, { title: "", note: "", due_at: "" });
          }),
        ])
      );
    }
    var node = group("tasks", "待办", tasks.length, extra, list("wb-tasks", tasks, "暂无待办。", taskItem));
    if (forms[addKey]) node.insertBefore(taskForm(addKey), node.lastChild);
    return node;
  }

  function taskItem(task) {
    var key = "task:" + task.id;
    var overdue = task.due_at && new Date(task.due_at).getTime() < Date.now();
    var children = [
      el("div", { className: "wb-biz-text", text: task.title }),
      task.note ? el("p", { className: "wb-biz-note wb-muted", text: task.note }) : null,
      meta([
        task.due_at
          ? el("span", { className: overdue ? "wb-biz-overdue" : null }, ["截止 ", ui.timeNode(task.due_at), overdue ? "（已过期）" : ""])
          : null,
        labelled("创建", task.created_at),
      ]),
    ];
    children.push(resolvePart("task", task, key));
    return el("li", { className: "wb-biz-item", "data-task": String(task.id), "data-key": key }, children);
  }

  function taskForm(key) {
    var state = forms[key];
    var ids = { title: "wb-biz-" + ++sequence, note: "wb-biz-" + ++sequence, due: "wb-biz-" + ++sequence, error: "wb-biz-" + ++sequence };
    var form = el(
      "form",
      {
        className: "wb-biz-form",
        "data-form": key,
        "data-key": key,
        novalidate: true,
        "aria-label": "新建待办",
        onsubmit: function (event) {
          event.preventDefault();
          submitTask(key);
        },
      },
      [
        el("label", { for: ids.title, text: "待办标题" }),
        field("input", key, "title", { id: ids.title, type: "text", maxlength: "200", placeholder: "如：周六上午带看张江两居室", "aria-describedby": ids.error, "aria-required": "true" }),
        el("label", { for: ids.note, text: "说明（可选）" }),
        field("textarea", key, "note", { id: ids.note, rows: "2", maxlength: "500" }),
        el("label", { for: ids.due, text: "截止时间（可选，北京时间）" }),
        field("input", key, "due_at", { id: ids.due, type: "datetime-local" }),
        formButtons(key, state, "添加", function () {
          closeForm(key, "[data-action='add']");
          focusTarget("task:add", "[data-action='add']");
        }),
        errorNode(ids.error, state.error),
      ]
    );
    return form;
  }

  function submitTask(key) {
    var state = forms[key];
    if (!state || state.busy) return;
    var values = state.values;
    var payload = { title: values.title, note: values.note || "", due_at: dueAtValue(values.due_at), reason: "客服在智能会话中新建" };
    send(key, "POST", "conversations/" + encodeURIComponent(drawnFor) + "/tasks/", payload, {
      apply: function (task) {
        return { tasks: latest.tasks.concat([task]) };
      },
      then: function () {
        focusTarget("task:add", "[data-action='add']");
      },
    });
  }

  // --- alerts ---------------------------------------------------------------------------------

  function alertGroup(alerts) {
    return group("alerts", "预警", alerts.length, [], list("wb-alerts", alerts, "暂无预警。", alertItem));
  }

  function alertItem(alert) {
    var key = "alert:" + alert.id;
    return el("li", { className: "wb-biz-item wb-alert wb-alert--" + alert.level, "data-alert": String(alert.id), "data-key": key }, [
      el("div", { className: "wb-biz-text" }, [el("span", { className: "wb-badge", text: alert.level_label }), " " + alert.text]),
      meta([alert.kind_label ? el("span", { text: alert.kind_label }) : null, labelled("发生于", alert.created_at)]),
      resolvePart("alert", alert, key),
    ]);
  }

  // --- recommendations ------------------------------------------------------------------------

  function recommendationGroup(recommendations) {
    return group(
      "recommendations",
      "推荐",
      recommendations.length,
      [],
      list("wb-recommendations", recommendations, "暂无推荐。", recommendationItem)
    );
  }

  function feedbackLine(feedback) {
    return [
      el("span", { className: "wb-badge wb-badge--verdict-" + feedback.verdict, text: feedback.source_label + "·" + feedback.verdict_label }),
      feedback.comment ? el("span", { className: "wb-biz-comment", text: " “" + feedback.comment + "”" }) : null,
      el("span", { className: "wb-muted" }, [" " + (feedback.actor_name || "系统") + " · ", ui.timeNode(feedback.created_at)]),
    ];
  }

  function recommendationItem(recommendation) {
    var key = "recommendation:" + recommendation.id;
    var children = [el("div", { className: "wb-biz-text", text: recommendation.text })];
    var last = recommendation.latest_feedback;
    children.push(
      el(
        "div",
        { className: "wb-biz-feedback", "data-latest-feedback": last ? String(last.id) : "" },
        last ? [el("span", { className: "wb-muted", text: "最新反馈：" })].concat(feedbackLine(last)) : [el("span", { className: "wb-muted", text: "尚无反馈" })]
      )
    );
    var all = recommendation.feedback || [];
    if (all.length > 1) {
      var details = el("details", { className: "wb-biz-history", open: unfolded[recommendation.id] ? true : null }, [
        el("summary", { text: "反馈记录（" + all.length + " 条）" }),
        el(
          "ol",
          {},
          all.map(function (feedback) {
            return el("li", {}, feedbackLine(feedback));
          })
        ),
      ]);
      details.addEventListener("toggle", function () {
        unfolded[recommendation.id] = details.open;
      });
      children.push(details);
    }
    children.push(meta([labelled("推荐于", recommendation.created_at)]));
    var feedbackKey = key + ":feedback";
    var resolveKey = key + ":resolve";
    if (forms[feedbackKey]) {
      children.push(feedbackForm(feedbackKey));
    } else if (forms[resolveKey]) {
      children.push(reasonForm("recommendation", resolveKey, recommendation));
    } else {
      children.push(
        el("div", { className: "wb-biz-actions" }, [
          button("记录反馈", "feedback", function () {
            openForm(feedbackKey, { source: "customer", verdict: "", comment: "" });
          }),
          button(KINDS.recommendation.resolveLabel, "resolve", function () {
            openForm(resolveKey, { reason: "" });
          }),
        ])
      );
    }
    return el("li", { className: "wb-biz-item", "data-recommendation": String(recommendation.id), "data-key": key }, children);
  }

  function feedbackForm(key) {
    var state = forms[key];
    var ids = { source: "wb-biz-" + ++sequence, verdict: "wb-biz-" + ++sequence, comment: "wb-biz-" + ++sequence, error: "wb-biz-" + ++sequence };
    var options = function (name, placeholder) {
      var list = placeholder ? [{ value: "", label: placeholder }] : [];
      return list.concat(choices(name));
    };
    return el(
      "form",
      {
        className: "wb-biz-form",
        "data-form": key,
        "data-key": key,
        novalidate: true,
        "aria-label": "记录推荐反馈",
        onsubmit: function (event) {
          event.preventDefault();
          submitFeedback(key);
        },
      },
      [
        el("label", { for: ids.source, text: "反馈方" }),
        select(key, "source", ids.source, options("feedback_source")),
        el("label", { for: ids.verdict, text: "反馈结论" }),
        select(key, "verdict", ids.verdict, options("feedback_verdict", "— 请选择 —"), ids.error),
        el("label", { for: ids.comment, text: "反馈内容（可选）" }),
        field("textarea", key, "comment", { id: ids.comment, rows: "2", maxlength: "300", placeholder: "如：觉得租金偏高，想看低一点的" }),
        formButtons(key, state, "记录", function () {
          closeForm(key, "[data-action='feedback']");
        }),
        errorNode(ids.error, state.error),
      ]
    );
  }

  function submitFeedback(key) {
    var state = forms[key];
    if (!state || state.busy) return;
    if (!state.values.verdict) {
      state.error = "请选择反馈结论";
      draw(latest);
      focusTarget(key, "[data-field='verdict']");
      return;
    }
    var id = key.split(":")[1];
    var values = state.values;
    var payload = { source: values.source, verdict: values.verdict, comment: values.comment || "" };
    send(key, "POST", "recommendations/" + id + "/feedback/", payload, {
      apply: function (recommendation) {
        return { recommendations: replaced(latest.recommendations, recommendation) };
      },
      then: function () {
        focusTarget("recommendation:" + id, "[data-action='feedback']");
      },
    });
  }

  // --- resolving any of the three -------------------------------------------------------------

  function resolvePart(kind, item, key) {
    var formKey = key + ":resolve";
    if (forms[formKey]) return reasonForm(kind, formKey, item);
    return el("div", { className: "wb-biz-actions" }, [
      button(KINDS[kind].resolveLabel, "resolve", function () {
        openForm(formKey, { reason: "" });
      }),
    ]);
  }

  function reasonForm(kind, key, item) {
    var state = forms[key];
    var spec = KINDS[kind];
    var ids = { reason: "wb-biz-" + ++sequence, error: "wb-biz-" + ++sequence };
    return el(
      "form",
      {
        className: "wb-biz-form wb-biz-form--inline",
        "data-form": key,
        "data-key": key,
        novalidate: true,
        "aria-label": spec.formLabel,
        onsubmit: function (event) {
          event.preventDefault();
          var current = forms[key];
          if (!current || current.busy) return;
          send(key, "POST", spec.path + item.id + "/resolve/", { reason: current.values.reason || "" }, {
            apply: function () {
              var change = {};
              change[spec.group] = latest[spec.group].filter(function (other) {
                return other.id !== item.id;
              });
              return change;
            },
            then: function () {
              var heading = document.getElementById("wb-biz-" + spec.group + "-title");
              if (heading) heading.focus();
            },
          });
        },
      },
      [
        el("label", { for: ids.reason, text: spec.reasonLabel }),
        field("input", key, "reason", {
          id: ids.reason,
          type: "text",
          maxlength: "300",
          placeholder: spec.placeholder,
          "aria-required": "true",
          "aria-describedby": ids.error,
        }),
        formButtons(key, state, spec.submit, function () {
          closeForm(key, "[data-action='resolve']");
        }),
        errorNode(ids.error, state.error),
      ]
    );
  }

  // --- form parts -----------------------------------------------------------------------------

  function field(tag, key, name, attrs) {
    var node = el(tag, Object.assign({ className: "wb-biz-input", "data-field": name, name: name }, attrs));
    node.value = forms[key].values[name] || "";
    node.addEventListener("input", function () {
      if (forms[key]) forms[key].values[name] = node.value;
    });
    return node;
  }

  function select(key, name, id, options, describedBy) {
    var node = el("select", { id: id, className: "wb-biz-input", "data-field": name, name: name, "aria-describedby": describedBy || null });
    options.forEach(function (option) {
      node.appendChild(el("option", { value: option.value, text: option.label }));
    });
    node.value = forms[key].values[name] || "";
    node.addEventListener("change", function () {
      if (forms[key]) forms[key].values[name] = node.value;
    });
    return node;
  }

  function formButtons(key, state, submitLabel, onCancel) {
    return el("div", { className: "wb-biz-actions" }, [
      el("button", {
        type: "submit",
        className: "wb-button wb-button--small wb-button--primary",
        "data-action": "submit",
        disabled: state.busy,
        "data-busy": state.busy ? "1" : null,
        text: state.busy ? "提交中…" : submitLabel,
      }),
      el("button", { type: "button", className: "wb-button wb-button--small", "data-action": "cancel", disabled: state.busy, text: "取消", onclick: onCancel }),
    ]);
  }

  function errorNode(id, message) {
    return el("p", { id: id, className: "wb-inline-error", role: "alert", "data-form-error": "1", hidden: !message, text: message || "" });
  }

  /** The list with `item` in place of the row with its id. */
  function replaced(items, item) {
    return items.map(function (other) {
      return other.id === item.id ? item : other;
    });
  }

  /**
   * One write through the account API. On success the form closes, `after.apply(answer)` shows
   * the outcome at once (the resolved row gone, the new feedback in place), `after.then()` moves
   * the focus, and the overview is reloaded; on failure the form stays with the API's reason.
   */
  function send(key, method, path, payload, after) {
    var state = forms[key];
    state.busy = true;
    state.error = "";
    draw(latest);
    var conversation = drawnFor;
    return ui
      .api(method, ui.accountUrl(path), payload)
      .then(function (answer) {
        delete forms[key];
        if (drawnFor !== conversation) return;
        if (after.apply && answer) latest = Object.assign({}, latest, after.apply(answer));
        draw(latest);
        if (after.then) after.then();
        return WB.refresh();
      })
      .catch(function (error) {
        if (!forms[key] || drawnFor !== conversation) return;
        forms[key].busy = false;
        forms[key].error = errorMessage(error);
        draw(latest);
        focusTarget(key, "[data-field]");
      });
  }

  // --- the panel ------------------------------------------------------------------------------

  var listening = false;

  function listen() {
    var root = body();
    if (listening || !root) return;
    listening = true;
    // A held-back refresh is drawn once the focus has left the forms (after the click that moved it).
    root.addEventListener("focusout", function (event) {
      if (!event.relatedTarget || !root.contains(event.relatedTarget)) window.setTimeout(flush, 0);
    });
    root.addEventListener("click", function () {
      window.setTimeout(flush, 0);
    });
  }

  WB.registerPanel({
    name: "business",
    select: function (data) {
      return {
        conversation: data.customer ? data.customer.conversation_id : null,
        tasks: data.tasks || [],
        alerts: data.alerts || [],
        recommendations: data.recommendations || [],
      };
    },
    render: function (slice, data, context) {
      listen();
      latest = slice;
      if (context.switched || slice.conversation !== drawnFor) {
        forms = {};
        unfolded = {};
        drawnFor = slice.conversation;
        draw(slice);
        return;
      }
      if (typing()) {
        stale = true; // drawn when the focus leaves the form
        return;
      }
      draw(slice);
    },
    clear: function () {
      forms = {};
      unfolded = {};
      latest = null;
      drawnFor = null;
      stale = false;
      var root = body();
      if (root) {
        ui.clear(root);
        root.appendChild(el("p", { className: "wb-muted", text: "请选择会话。" }));
      }
    },
  });

  WB.business = {
    errorMessage: errorMessage,
    dueAtValue: dueAtValue,
    pending: function () {
      return stale;
    },
  };
})(window);
