/*
 * 智能会话: the little Markdown a core-memory snapshot is written in ("## 偏好", "- 更喜欢地铁附近"),
 * shown readably: headings, bulleted and numbered lists, paragraphs. Nothing else is interpreted;
 * every text goes in through textContent, so whatever a memory item says stays text (no HTML, no
 * links, no script).
 *
 *   Qiwei.markdown.render(container, text, {headingOffset: 3});  // "#" → <h4>, "##" → <h5>
 */
(function (global) {
  "use strict";

  var Qiwei = (global.Qiwei = global.Qiwei || {});

  var HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
  var BULLET = /^\s*[-*+]\s+(.*)$/;
  var NUMBERED = /^\s*\d{1,9}[.)]\s+(.*)$/;

  function node(tag, className, text) {
    var element = document.createElement(tag);
    if (className) element.className = className;
    if (text !== undefined) element.textContent = text;
    return element;
  }

  /** The blocks of `text`: [{type: "heading", level, text} | {type: "ul"|"ol", items} | {type: "p", lines}]. */
  function parse(text) {
    var blocks = [];
    var current = null;
    String(text || "")
      .replace(/\r\n?/g, "\n")
      .split("\n")
      .forEach(function (line) {
        var match;
        if (!line.trim()) {
          current = null;
        } else if ((match = HEADING.exec(line))) {
          blocks.push({ type: "heading", level: match[1].length, text: match[2] });
          current = null;
        } else if ((match = BULLET.exec(line)) || (match = NUMBERED.exec(line))) {
          var type = BULLET.test(line) ? "ul" : "ol";
          if (!current || current.type !== type) {
            current = { type: type, items: [] };
            blocks.push(current);
          }
          current.items.push(match[1]);
        } else if (current && current.type !== "p" && /^\s+\S/.test(line)) {
          // An indented line continues the list item above it.
          current.items[current.items.length - 1] += " " + line.trim();
        } else {
          if (!current || current.type !== "p") {
            current = { type: "p", lines: [] };
            blocks.push(current);
          }
          current.lines.push(line.trim());
        }
      });
    return blocks;
  }

  function render(container, text, options) {
    options = options || {};
    var offset = typeof options.headingOffset === "number" ? options.headingOffset : 3;
    while (container.firstChild) container.removeChild(container.firstChild);
    parse(text).forEach(function (block) {
      if (block.type === "heading") {
        var heading = node("h" + Math.min(6, block.level + offset), "wb-md-heading", block.text);
        heading.setAttribute("data-level", String(block.level));
        container.appendChild(heading);
      } else if (block.type === "p") {
        var paragraph = node("p", "wb-md-p");
        block.lines.forEach(function (line, index) {
          if (index) paragraph.appendChild(document.createElement("br"));
          paragraph.appendChild(document.createTextNode(line));
        });
        container.appendChild(paragraph);
      } else {
        var list = node(block.type, "wb-md-list");
        block.items.forEach(function (item) {
          list.appendChild(node("li", null, item));
        });
        container.appendChild(list);
      }
    });
    return container;
  }

  Qiwei.markdown = { parse: parse, render: render };
})(window);
