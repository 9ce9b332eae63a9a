// The memory item add form's source-message picker: when the supervisor picks a customer, list
// that customer's latest messages (masked) as checkboxes, from memoryitem/source-messages/.
'use strict';
(function () {
  function picker() { return document.getElementById('id_source_message_ids'); }

  function render(box, messages) {
    // Ticks survive a refill for messages still listed (the same customer chosen again).
    const ticked = new Set(Array.from(box.querySelectorAll('input:checked')).map(function (input) { return input.value; }));
    box.textContent = '';
    if (!messages.length) {
      const empty = document.createElement('div');
      empty.className = 'qw-muted';
      empty.textContent = '该客户还没有消息。';
      box.appendChild(empty);
      return;
    }
    messages.forEach(function (message, index) {
      const row = document.createElement('div');
      const label = document.createElement('label');
      const input = document.createElement('input');
      input.type = 'checkbox';
      input.name = 'source_message_ids';
      input.value = String(message.id);
      input.id = 'id_source_message_ids_' + index;
      input.checked = ticked.has(input.value);
      label.htmlFor = input.id;
      label.appendChild(input);
      label.appendChild(document.createTextNode(' ' + message.label));
      row.appendChild(label);
      box.appendChild(row);
    });
  }

  function reload(customerId) {
    const box = picker();
    if (!box) { return; }
    if (!customerId) { render(box, []); return; }
    const url = new URL('../source-messages/', window.location.href);
    url.searchParams.set('customer', customerId);
    fetch(url, {credentials: 'same-origin', headers: {'Accept': 'application/json'}})
      .then(function (response) { return response.ok ? response.json() : {messages: []}; })
      .then(function (data) { render(box, data.messages || []); });
  }

  document.addEventListener('DOMContentLoaded', function () {
    const select = document.getElementById('id_customer');
    if (!select || !picker()) { return; }
    // The page came with this customer's messages, ticked as the supervisor left them when a
    // refused form comes back (issue 39): refill only when another customer is chosen. select2
    // announces a change while it starts, for the customer already chosen.
    let shown = select.value;
    function changed() {
      if (select.value === shown) { return; }
      shown = select.value;
      reload(select.value);
    }
    // The customer field is an autocomplete (select2), which announces changes through jQuery.
    if (window.django && window.django.jQuery) {
      window.django.jQuery(select).on('change', changed);
    } else {
      select.addEventListener('change', changed);
    }
  });
})();
