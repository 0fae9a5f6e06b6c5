// Forms: create with a field builder, list, active toggle, submissions with read / unread and
// spam kept apart from the inbox, each deletable, the form's markup to paste (decision 203),
// export (JSON, CSV), delete; per form its notifications: webhook (secret shown once,
// rotate), e-mail (each / digest, verified addresses) and the delivery log with redelivery.
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var el = S.el
  var types = S.data.fieldTypes || ['text']
  var rowSeq = 0
  var current = null
  // the inbox by default: submissions not flagged as spam (decision 203)
  var subState = { page: 1, per_page: 20, is_read: '', is_spam: 'false' }

  /** One row of the field builder, with labelled controls. */
  function fieldRow(f) {
    f = f || {}
    var n = ++rowSeq
    var id = function (x) {
      return 'f' + n + '-' + x
    }
    var typeSel = el(
      'select',
      { id: id('type'), class: 'f-type' },
      types.map(function (x) {
        return el('option', { value: x, text: x, selected: x === (f.type || 'text') })
      }),
    )
    // options for a select, and for a checkbox (a multiple choice; none: one box)
    var takesOptions = function (type) {
      return type === 'select' || type === 'checkbox'
    }
    var optsWrap = el(
      'div',
      { hidden: !takesOptions(f.type || 'text') },
      el('label', { for: id('options'), text: t('forms.field.options') }),
      el('input', { id: id('options'), class: 'f-options', maxlength: 1000, value: (f.options || []).join(', ') }),
    )
    typeSel.addEventListener('change', function () {
      optsWrap.hidden = !takesOptions(typeSel.value)
    })
    var li = el(
      'li',
      {},
      el(
        'div',
        { class: 'field-row' },
        el(
          'div',
          {},
          el('label', { for: id('name'), text: t('forms.field.name') }),
          el('input', {
            id: id('name'),
            class: 'f-name',
            required: true,
            maxlength: 64,
            // the API's field names (FIELD_NAME_RE): a letter or digit of any script, then
            // letters, digits, marks, "_", "." or "-"
            pattern: '[\\p{L}\\p{N}][\\p{L}\\p{N}\\p{M}_.\\-]*',
            // the rule, said under the legend; as the title, the browser's bubble names it too
            'aria-describedby': 'field-name-hint',
            title: t('forms.field.name_hint'),
            value: f.name || '',
            autocapitalize: 'none',
            spellcheck: 'false',
          }),
        ),
        el(
          'div',
          {},
          el('label', { for: id('label'), text: t('forms.field.label') }),
          el('input', { id: id('label'), class: 'f-label', maxlength: 200, value: f.label || '' }),
        ),
        el('div', {}, el('label', { for: id('type'), text: t('forms.field.type') }), typeSel),
        el('label', { class: 'check' }, el('input', { type: 'checkbox', class: 'f-required', checked: !!f.required }), t('forms.field.required')),
        optsWrap,
        el('button', {
          type: 'button',
          class: 'danger',
          text: t('forms.field.remove'),
          onclick: function () {
            li.remove()
          },
        }),
      ),
    )
    S.$('field-rows').appendChild(li)
  }

  function fieldsConfig() {
    return Array.prototype.map.call(S.$('field-rows').children, function (li) {
      var q = function (c) {
        return li.querySelector(c)
      }
      var f = { name: q('.f-name').value.trim(), type: q('.f-type').value, required: q('.f-required').checked }
      var label = q('.f-label').value.trim()
      if (label) f.label = label
      var options = q('.f-options')
        .value.split(',')
        .map(function (s) {
          return s.trim()
        })
        .filter(Boolean)
      // a select needs its options (the API says so when there are none); a checkbox with
      // options is a multiple choice, without them one box
      if (f.type === 'select' || (f.type === 'checkbox' && options.length > 0)) f.options = options
      return f
    })
  }

  function submitUrl(form) {
    return form.submit_url || S.data.origin + '/api/forms/submit/' + S.enc(form.form_slug)
  }

  function loadForms() {
    return S.api
      .get('/svc_api/forms/list')
      .then(function (r) {
        var d = r.data
        var q = d.quota
        if (q && q.forms && q.submissions_month) {
          S.$('forms-quota').textContent = t('forms.quota', {
            forms: q.forms.used,
            max_forms: q.forms.limit,
            subs: q.submissions_month.used,
            max_subs: q.submissions_month.limit,
          })
        }
        var tbody = S.clear(S.$('forms-table').querySelector('tbody'))
        if (d.forms.length === 0) S.emptyRow(tbody, t('forms.none'))
        d.forms.forEach(function (f) {
          tbody.appendChild(
            S.row([
              f.form_name,
              el('code', { text: f.form_slug }),
              el(
                'label',
                { class: 'check' },
                el('input', {
                  type: 'checkbox',
                  checked: f.is_active,
                  'aria-label': t('forms.col.active') + ' ' + f.form_name,
                  onchange: function (e) {
                    setActive(f, e.target.checked)
                  },
                }),
              ),
              String(f.submission_count || 0),
              String(f.unread_count || 0),
              String(f.spam_count || 0),
              el(
                'div',
                { class: 'buttons' },
                el('button', {
                  type: 'button',
                  text: t('forms.view'),
                  'aria-label': t('forms.view') + ' ' + f.form_name,
                  onclick: function () {
                    openForm(f)
                  },
                }),
                el('button', {
                  type: 'button',
                  text: t('forms.notify'),
                  'aria-label': t('forms.notify') + ' ' + f.form_name,
                  onclick: function () {
                    openNotify(f)
                  },
                }),
                el('button', {
                  type: 'button',
                  class: 'danger',
                  text: t('common.delete'),
                  'aria-label': t('common.delete') + ' ' + f.form_name,
                  onclick: function () {
                    remove(f)
                  },
                }),
              ),
            ]),
          )
        })
        if (current) {
          var fresh = d.forms.filter(function (f) {
            return f.id === current.id
          })[0]
          if (fresh) current = Object.assign({}, current, fresh)
        }
      })
      .catch(S.fail('forms-status'))
  }

  function setActive(f, on) {
    S.api
      .put('/svc_api/forms/update/' + S.enc(f.id), { is_active: on })
      .then(function () {
        S.toast(t('common.saved'))
        return loadForms()
      })
      .catch(S.fail('forms-status'))
  }
  function remove(f) {
    if (!window.confirm(t('forms.delete_confirm', { name: f.form_name }))) return
    S.api
      .del('/svc_api/forms/delete/' + S.enc(f.id))
      .then(function () {
        // a message about the form ("Form created", an error) goes with it
        S.status('forms-status', '')
        S.toast(t('common.deleted'))
        if (current && current.id === f.id) {
          current = null
          S.$('subs').hidden = true
        }
        if (notifyForm && notifyForm.id === f.id) closeNotify()
        return loadForms()
      })
      .catch(S.fail('forms-status'))
  }

  /** Text for HTML markup, in element content and in double-quoted attribute values alike. */
  function h(v) {
    return String(v).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
  }
  /**
   * The HTML a user can paste into a page to post to this form, as the form takes it (decision
   * 203): every name, label and option escaped; a checkbox with options one box per option
   * (no `required` on the boxes: the service checks that one is chosen); the honeypot field,
   * hidden; UTF-8 whatever the page's own encoding. With a minimum fill time, the hidden `_ts`
   * and the one-line script right after the form that puts the page's load time in it: without
   * them every post would be `no_timestamp` spam. A form with a file field is sent as
   * multipart/form-data, which files need.
   */
  function embed(form) {
    var files = (form.fields_config || []).some(function (f) {
      return f.type === 'file'
    })
    var enctype = files ? ' enctype="multipart/form-data"' : ''
    var lines = ['<form action="' + h(submitUrl(form)) + '" method="post"' + enctype + ' accept-charset="UTF-8">']
    ;(form.fields_config || []).forEach(function (f) {
      var label = h(f.label || f.name)
      var name = h(f.name)
      var req = f.required ? ' required' : ''
      if (f.type === 'textarea') lines.push('  <label>' + label + ' <textarea name="' + name + '"' + req + '></textarea></label>')
      else if (f.type === 'select') {
        lines.push('  <label>' + label + ' <select name="' + name + '"' + req + '>')
        ;(f.options || []).forEach(function (o) {
          lines.push('    <option value="' + h(o) + '">' + h(o) + '</option>')
        })
        lines.push('  </select></label>')
      } else if (f.type === 'checkbox' && f.options) {
        lines.push('  <fieldset><legend>' + label + '</legend>')
        f.options.forEach(function (o) {
          lines.push('    <label><input type="checkbox" name="' + name + '" value="' + h(o) + '"> ' + h(o) + '</label>')
        })
        lines.push('  </fieldset>')
      } else if (f.type === 'checkbox') lines.push('  <label><input type="checkbox" name="' + name + '" value="true"' + req + '> ' + label + '</label>')
      else lines.push('  <label>' + label + ' <input type="' + h(f.type || 'text') + '" name="' + name + '"' + req + '></label>')
    })
    if (form.honeypot_field)
      lines.push('  <input type="text" name="' + h(form.honeypot_field) + '" tabindex="-1" autocomplete="off" aria-hidden="true" style="display:none">')
    if (form.min_fill_seconds > 0) lines.push('  <input type="hidden" name="_ts">')
    lines.push('  <button type="submit">Send</button>', '</form>')
    if (form.min_fill_seconds > 0) lines.push('<script>document.currentScript.previousElementSibling._ts.value = Date.now()</script>')
    return lines.join('\n')
  }

  function openForm(f) {
    current = f
    subState.page = 1
    S.$('subs').hidden = false
    S.$('subs-title').textContent = t('forms.submissions', { name: f.form_name })
    S.$('subs-url').textContent = submitUrl(f)
    S.$('subs-embed').textContent = embed(f)
    loadSubs()
    S.$('subs').scrollIntoView()
  }

  function columns(subs) {
    var cols = (current.fields_config || []).map(function (f) {
      return f.name
    })
    subs.forEach(function (s) {
      Object.keys(s.data || {}).forEach(function (k) {
        if (cols.indexOf(k) < 0) cols.push(k)
      })
      ;(s.files || []).forEach(function (f) {
        if (cols.indexOf(f.field) < 0) cols.push(f.field)
      })
    })
    return cols
  }
  /** A file's size for people: bytes, KiB or MiB. */
  function size(n) {
    return n < 1024 ? n + ' B' : n < 1048576 ? (n / 1024).toFixed(1) + ' KiB' : (n / 1048576).toFixed(1) + ' MiB'
  }
  /**
   * The cell of column c: the files sent in that field, as download links (the service answers
   * them as attachments), after the field's text if it has any.
   */
  function subCell(s, c) {
    var files = (s.files || []).filter(function (f) {
      return f.field === c
    })
    var text = cell(fieldOf(s, c))
    if (files.length === 0) return text
    return el(
      'span',
      { class: 'files' },
      text,
      files.map(function (f) {
        return el('a', { href: f.url, download: f.filename, class: 'file', text: f.filename + ' (' + size(f.size) + ')', title: f.content_type })
      }),
    )
  }
  /** A value's cell text; a multi-line one (a textarea's, sent with CRLF) keeps its lines (td .lines). */
  function cell(v) {
    if (v === undefined || v === null) return ''
    if (typeof v !== 'string') return JSON.stringify(v)
    return /[\r\n]/.test(v) ? el('span', { class: 'lines', text: v.replace(/\r\n?/g, '\n') }) : v
  }
  /** A submission's value of field c, own keys only ("constructor" a submission lacks is undefined). */
  function fieldOf(s, c) {
    var d = s.data || {}
    return Object.prototype.hasOwnProperty.call(d, c) ? d[c] : undefined
  }

  // only the latest load renders: an older one answering last must not undo a newer list
  var subsSeq = 0
  function loadSubs() {
    var f = current
    var mine = ++subsSeq
    return S.api
      .get('/svc_api/forms/data/' + S.enc(f.id) + S.qs(subState))
      .then(function (r) {
        // by id: loadForms replaces `current` with a fresh copy of the same form
        if (!current || current.id !== f.id || mine !== subsSeq) return
        var d = r.data
        // a page emptied by a delete (its last row, on the last page): the page before it
        if (d.submissions.length === 0 && subState.page > 1 && d.total_pages < subState.page) {
          subState.page = Math.max(1, d.total_pages)
          return loadSubs()
        }
        var cols = columns(d.submissions)
        var spamView = subState.is_spam === 'true'
        var table = S.$('subs-table')
        var head = S.clear(table.querySelector('thead'))
        head.appendChild(
          el(
            'tr',
            {},
            el('th', { scope: 'col', text: t('forms.col.time') }),
            cols.map(function (c) {
              return el('th', { scope: 'col', text: c })
            }),
            spamView ? el('th', { scope: 'col', text: t('forms.col.reason') }) : [],
            el('th', { scope: 'col', text: t('forms.col.read') }),
          ),
        )
        var tbody = S.clear(table.querySelector('tbody'))
        if (d.submissions.length === 0) S.emptyRow(tbody, t('forms.no_submissions'))
        d.submissions.forEach(function (s) {
          tbody.appendChild(
            S.row(
              [S.time(s.created_at)].concat(
                cols.map(function (c) {
                  return subCell(s, c)
                }),
                spamView ? [s.spam_reason || ''] : [],
                [
                  el(
                    'div',
                    { class: 'buttons' },
                    el('button', {
                      type: 'button',
                      text: s.is_read ? t('forms.mark_unread') : t('forms.mark_read'),
                      onclick: function () {
                        mark(s, { is_read: !s.is_read })
                      },
                    }),
                    el('button', {
                      type: 'button',
                      text: s.is_spam ? t('forms.not_spam') : t('forms.mark_spam'),
                      onclick: function () {
                        mark(s, { is_spam: !s.is_spam })
                      },
                    }),
                    el('button', {
                      type: 'button',
                      class: 'danger',
                      text: t('common.delete'),
                      'aria-label': t('forms.delete_submission', { time: S.time(s.created_at) }),
                      onclick: function () {
                        removeSubmission(s)
                      },
                    }),
                  ),
                ],
              ),
              { class: s.is_read ? '' : 'unread' },
            ),
          )
        })
        S.pager('subs-pager', d.page, d.total_pages, function (p) {
          subState.page = p
          loadSubs()
        })
      })
      .catch(S.fail('forms-status'))
  }

  /** Sets a submission's flags ({is_read} or {is_spam}), then shows the list and counters again. */
  function mark(s, flags) {
    S.api
      .put('/svc_api/forms/mark_read/' + S.enc(s.id), flags)
      .then(function () {
        loadSubs()
        loadForms()
      })
      .catch(S.fail('forms-status'))
  }

  /** Deletes one submission with its files once the owner confirms, then shows the list and counters again. */
  function removeSubmission(s) {
    var n = (s.files || []).length
    var when = S.time(s.created_at)
    var ask = n > 0 ? t('forms.delete_submission_files_confirm', { time: when, n: n }) : t('forms.delete_submission_confirm', { time: when })
    if (!window.confirm(ask)) return
    S.api
      .del('/svc_api/forms/delete_submission/' + S.enc(s.id))
      .then(function () {
        S.toast(t('common.deleted'))
        loadSubs()
        loadForms()
      })
      .catch(S.fail('forms-status'))
  }

  function exportRows() {
    return S.api.get('/svc_api/forms/export/' + S.enc(current.id)).then(function (r) {
      return r.data
    })
  }
  function fileBase() {
    return 'form-' + String(current.form_slug).replace(/[^A-Za-z0-9_-]/g, '_')
  }
  S.$('subs-export-json').addEventListener('click', function () {
    exportRows()
      .then(function (d) {
        S.download(fileBase() + '.json', JSON.stringify(d, null, 2), 'application/json')
      })
      .catch(S.fail('forms-status'))
  })
  // the API's CSV export, so the dashboard's file has its columns (docs/api/forms.md); a blob,
  // as text() would drop the byte-order mark spreadsheets need
  S.$('subs-export-csv').addEventListener('click', function () {
    fetch('/svc_api/forms/export/' + S.enc(current.id) + '?format=csv', { credentials: 'same-origin' })
      .then(function (r) {
        if (r.ok) return r.blob()
        return r.text().then(function (text) {
          var body = null
          try {
            body = JSON.parse(text)
          } catch (e) {
            /* not the API's JSON: the status alone */
          }
          throw new S.ApiError(r.status, body)
        })
      })
      .then(function (blob) {
        S.download(fileBase() + '.csv', blob, 'text/csv')
      })
      .catch(S.fail('forms-status'))
  })
  S.$('subs-filter').addEventListener('change', function () {
    // '' (every submission but spam), 'false' (unread), 'true' (read), or 'spam'
    var v = S.$('subs-filter').value
    subState.is_spam = v === 'spam' ? 'true' : 'false'
    subState.is_read = v === 'spam' ? '' : v
    subState.page = 1
    loadSubs()
  })
  S.$('subs-embed-copy').addEventListener('click', function () {
    S.copy(S.$('subs-embed').textContent)
  })

  // ---- notifications of one form ----
  var notifyForm = null
  var delivTimer = null
  var hookExists = false
  var emailMode = 'each'

  function closeNotify() {
    notifyForm = null
    clearTimeout(delivTimer)
    S.$('notify').hidden = true
  }

  function openNotify(f) {
    notifyForm = f
    S.$('notify').hidden = false
    S.$('notify-title').textContent = t('notify.title', { name: f.form_name })
    S.status('notify-status', '')
    S.$('hook-secret').hidden = true
    S.$('hook-secret-value').value = ''
    Promise.all([loadHook(), loadEmail(), loadDeliveries()]).then(function () {
      S.$('notify').scrollIntoView()
    })
  }

  function showHook(w) {
    hookExists = !!w
    var url = S.$('hook-url')
    var enabled = S.$('hook-enabled')
    url.value = w ? w.url : ''
    enabled.checked = w ? w.enabled : true
    S.$('hook-rotate').hidden = !w
    S.$('hook-remove').hidden = !w
    S.$('hook-info').textContent = w
      ? t('notify.webhook_info', { hint: w.secret_hint, time: S.time(w.updated_at) }) + (w.enabled ? '' : ' · ' + t('notify.webhook_off'))
      : t('notify.webhook_none')
    if (w && w.secret) {
      S.$('hook-secret').hidden = false
      var input = S.$('hook-secret-value')
      input.value = w.secret
      input.focus()
      input.select()
    }
  }

  function loadHook() {
    var f = notifyForm
    return S.api
      .get('/svc_api/forms/webhook/' + S.enc(f.id))
      .then(function (r) {
        if (notifyForm === f) showHook(r.data)
      })
      .catch(function (err) {
        if (notifyForm !== f) return
        // 1422: the form has no webhook yet
        if (err.body && err.body.error_code === 1422) showHook(null)
        else S.fail('notify-status')(err)
      })
  }

  function loadEmail() {
    var f = notifyForm
    return Promise.all([S.api.get('/svc_api/forms/email/' + S.enc(f.id)), S.api.get('/svc_api/notify/addresses')])
      .then(function (rs) {
        if (notifyForm !== f) return
        var e = rs[0].data
        var addrs = rs[1].data
        emailMode = e.mode
        var sel = S.$('email-mode')
        sel.value = e.enabled ? e.mode : 'off'
        sel.disabled = !e.smtp_configured && !e.enabled
        S.$('email-info').textContent = !e.smtp_configured
          ? t('notify.email_no_smtp')
          : e.recipients.length
            ? t('notify.email_to', { list: e.recipients.join(', ') })
            : t('notify.email_nobody')
        S.$('addr-box').hidden = !e.smtp_configured
        var list = S.clear(S.$('addr-list'))
        addrs.forEach(function (a) {
          list.appendChild(
            el(
              'li',
              {},
              a.address + ' ',
              el('span', { class: 'badge' + (a.verified ? ' on' : ''), text: a.verified ? t('notify.address_verified') : t('notify.address_pending') }),
              ' ',
              el('button', {
                type: 'button',
                class: 'danger',
                text: t('common.delete'),
                'aria-label': t('common.delete') + ' ' + a.address,
                onclick: function () {
                  S.api
                    .del('/svc_api/notify/addresses/' + S.enc(a.id))
                    .then(function () {
                      S.toast(t('common.deleted'))
                      return loadEmail()
                    })
                    .catch(S.fail('notify-status'))
                },
              }),
            ),
          )
        })
      })
      .catch(S.fail('notify-status'))
  }

  function loadDeliveries() {
    var f = notifyForm
    clearTimeout(delivTimer)
    return S.api
      .get('/svc_api/forms/deliveries/' + S.enc(f.id))
      .then(function (r) {
        if (notifyForm !== f) return
        var tbody = S.clear(S.$('deliv-table').querySelector('tbody'))
        if (r.data.length === 0) S.emptyRow(tbody, t('notify.none'))
        var pending = false
        r.data.forEach(function (d) {
          if (d.status === 'pending') pending = true
          // the last try's answer: its error, else the receiver's status (a delivered webhook's 2xx)
          var err = d.last_error || (d.last_status ? 'HTTP ' + d.last_status : '')
          tbody.appendChild(
            S.row(
              [
                S.time(d.created_at),
                d.kind,
                el('code', { text: d.target }),
                el('span', { class: 'badge' + (d.status === 'delivered' ? ' on' : ''), text: t('notify.status.' + d.status) }),
                String(d.tries),
                err,
                d.status === 'failed'
                  ? el('button', {
                      type: 'button',
                      text: t('notify.redeliver'),
                      'aria-label': t('notify.redeliver') + ' ' + d.id,
                      onclick: function () {
                        redeliver(d)
                      },
                    })
                  : '',
              ],
              { 'data-id': d.id, 'data-status': d.status },
            ),
          )
        })
        // pending deliveries change by themselves: look again while any is left
        if (pending) delivTimer = setTimeout(loadDeliveries, 2000)
      })
      .catch(S.fail('notify-status'))
  }

  function redeliver(d) {
    S.api
      .post('/svc_api/forms/redeliver/' + S.enc(d.id))
      .then(function (r) {
        S.toast(r.message || t('common.saved'))
        return loadDeliveries()
      })
      .catch(S.fail('notify-status'))
  }

  S.onSubmit(S.$('hook-form'), function () {
    var f = notifyForm
    S.status('notify-status', '')
    return S.api
      .put('/svc_api/forms/webhook/' + S.enc(f.id), {
        url: S.$('hook-url').value.trim(),
        enabled: S.$('hook-enabled').checked,
      })
      .then(function (r) {
        S.status('notify-status', r.message || t('common.saved'), 'ok')
        if (notifyForm === f) showHook(r.data)
      })
      .catch(S.fail('notify-status'))
  })
  S.$('hook-rotate').addEventListener('click', function () {
    if (!hookExists || !window.confirm(t('notify.rotate_confirm'))) return
    var f = notifyForm
    S.api
      .post('/svc_api/forms/webhook/' + S.enc(f.id) + '/rotate')
      .then(function (r) {
        S.status('notify-status', r.message || t('common.saved'), 'ok')
        if (notifyForm === f) showHook(r.data)
      })
      .catch(S.fail('notify-status'))
  })
  S.$('hook-remove').addEventListener('click', function () {
    var f = notifyForm
    if (!hookExists || !window.confirm(t('notify.webhook_remove_confirm', { name: f.form_name }))) return
    S.api
      .del('/svc_api/forms/webhook/' + S.enc(f.id))
      .then(function (r) {
        S.status('notify-status', r.message || t('common.deleted'), 'ok')
        S.$('hook-secret').hidden = true
        if (notifyForm === f) showHook(null)
      })
      .catch(S.fail('notify-status'))
  })
  S.$('hook-secret-copy').addEventListener('click', function () {
    S.copy(S.$('hook-secret-value').value)
  })
  S.$('email-mode').addEventListener('change', function () {
    var v = S.$('email-mode').value
    // the mode chosen is kept at once: an "off" chosen before the reload still keeps it
    if (v !== 'off') emailMode = v
    var body = v === 'off' ? { enabled: false, mode: emailMode } : { enabled: true, mode: v }
    S.api
      .put('/svc_api/forms/email/' + S.enc(notifyForm.id), body)
      .then(function (r) {
        S.status('notify-status', r.message || t('common.saved'), 'ok')
        return loadEmail()
      })
      .catch(function (err) {
        S.fail('notify-status')(err)
        loadEmail()
      })
  })
  S.onSubmit(S.$('addr-form'), function () {
    var input = S.$('addr-input')
    return S.api
      .post('/svc_api/notify/addresses', { address: input.value.trim() })
      .then(function (r) {
        S.status('notify-status', r.message || t('common.saved'), 'ok')
        input.value = ''
        return loadEmail()
      })
      .catch(S.fail('notify-status'))
  })
  S.$('deliv-refresh').addEventListener('click', function () {
    if (notifyForm) loadDeliveries()
  })

  S.$('field-add').addEventListener('click', function () {
    fieldRow()
  })
  S.onSubmit(S.$('form-create'), function () {
    var body = {
      form_name: S.$('form-name').value.trim(),
      fields_config: fieldsConfig(),
      allowed_origins: S.$('form-origins').value.split(/\s+/).filter(Boolean),
      is_active: true,
    }
    var slug = S.$('form-slug').value.trim()
    if (slug) body.form_slug = slug
    var redirect = S.$('form-redirect').value.trim()
    if (redirect) body.redirect_url = redirect
    return S.api
      .post('/svc_api/forms/create', body)
      .then(function (r) {
        S.status('forms-status', r.message || t('common.saved'), 'ok')
        S.$('form-create').reset()
        S.clear(S.$('field-rows'))
        fieldRow()
        return loadForms().then(function () {
          openForm(r.data)
        })
      })
      .catch(S.fail('forms-status'))
  })
  fieldRow({ name: 'name', label: '', type: 'text', required: true })
  loadForms()
})()
