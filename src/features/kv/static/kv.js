// My database (key-value store): list, view and edit values, public toggle, public link, public counters.
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var el = S.el
  var state = { page: 1, per_page: 50 }

  function publicUrl(key) {
    return S.data.origin + '/svc_api/data/public/' + S.enc(S.data.user) + '/' + S.enc(key)
  }
  /** A row's button that copies one of its entry's links (`urlOf(key)`), named with the key. */
  function copyButton(label, key, urlOf) {
    return el('button', {
      type: 'button',
      text: t(label),
      'aria-label': t(label) + ' ' + key,
      onclick: function () {
        S.copy(urlOf(key))
      },
    })
  }
  /** Where a page adds 1 to a public counter without a key (POST). */
  function incrUrl(key) {
    return publicUrl(key) + '/incr'
  }
  function preview(v) {
    var s = typeof v === 'string' ? v : JSON.stringify(v)
    return s.length > 120 ? s.slice(0, 120) + '…' : s
  }

  function load() {
    return S.api
      .get('/svc_api/data/list' + S.qs(state))
      .then(function (r) {
        var d = r.data
        if (d.quota && d.usage)
          S.$('kv-usage').textContent = t('kv.usage', { keys: d.usage.keys, max: d.quota.max_keys, size: S.bytes(d.quota.max_entry_bytes) })
        var tbody = S.clear(S.$('kv-table').querySelector('tbody'))
        if (d.items.length === 0) S.emptyRow(tbody, t('kv.none'))
        d.items.forEach(function (it) {
          tbody.appendChild(
            S.row([
              el('code', { text: it.key }),
              it.data_type,
              el('span', { class: 'mono', text: preview(it.value) }),
              el(
                'label',
                { class: 'check' },
                el('input', {
                  type: 'checkbox',
                  checked: it.is_public,
                  'aria-label': t('kv.col.public') + ' ' + it.key,
                  onchange: function (e) {
                    setPublic(it, e.target.checked)
                  },
                }),
              ),
              S.time(it.updated_at),
              el(
                'div',
                { class: 'buttons' },
                el('button', {
                  type: 'button',
                  text: t('kv.edit'),
                  'aria-label': t('kv.edit') + ' ' + it.key,
                  onclick: function () {
                    edit(it)
                  },
                }),
                it.is_public ? copyButton('kv.copy_url', it.key, publicUrl) : null,
                it.public_incr ? copyButton('kv.copy_incr_url', it.key, incrUrl) : null,
                el('button', {
                  type: 'button',
                  class: 'danger',
                  text: t('common.delete'),
                  'aria-label': t('common.delete') + ' ' + it.key,
                  onclick: function () {
                    remove(it)
                  },
                }),
              ),
            ]),
          )
          tbody.lastChild.children[2].className = 'value'
        })
        S.pager('kv-pager', d.page, d.total_pages, function (p) {
          state.page = p
          load()
        })
      })
      .catch(S.fail('kv-status'))
  }

  function edit(it) {
    S.fieldError(S.$('kv-key'), '')
    S.fieldError(S.$('kv-value'), '')
    S.fieldError(S.$('kv-type'), '')
    S.$('kv-key').value = it.key
    S.$('kv-type').value = it.data_type || 'json'
    S.$('kv-value').value = it.data_type === 'json' || typeof it.value !== 'string' ? JSON.stringify(it.value, null, 2) : it.value
    S.$('kv-tags').value = (it.tags || []).join(', ')
    S.$('kv-public').checked = !!it.is_public
    S.$('kv-public-incr').checked = !!it.public_incr
    S.$('kv-key').focus()
    S.$('kv-form').scrollIntoView()
  }

  function store(entry) {
    return S.api.post('/svc_api/data/store', entry)
  }
  function setPublic(it, on) {
    store({ key: it.key, value: it.value, data_type: it.data_type, tags: it.tags || [], is_public: on })
      .then(function () {
        S.toast(t('common.saved'))
        return load()
      })
      .catch(S.fail('kv-status'))
  }
  function remove(it) {
    if (!window.confirm(t('kv.delete_confirm', { key: it.key }))) return
    S.api
      .del('/svc_api/data/delete' + S.qs({ key: it.key }))
      .then(function () {
        S.toast(t('common.deleted'))
        return load()
      })
      .catch(S.fail('kv-status'))
  }

  /** The field a refusal of the store is about (key format or length: the key; size: the value). */
  var FIELD_OF_CODE = { 1601: 'kv-key', 1606: 'kv-key', 1602: 'kv-value' }

  S.onSubmit(S.$('kv-form'), function () {
    var keyField = S.$('kv-key')
    var valueField = S.$('kv-value')
    S.fieldError(keyField, '')
    S.fieldError(valueField, '')
    S.fieldError(S.$('kv-type'), '')
    S.status('kv-status', '')
    var type = S.$('kv-type').value
    var counter = S.$('kv-public-incr').checked
    if (counter && type !== 'number') return S.fieldError(S.$('kv-type'), t('kv.incr_needs_number'))
    var text = valueField.value
    var value = text
    if (type === 'json') {
      try {
        value = JSON.parse(text)
      } catch (err) {
        return S.fieldError(valueField, t('kv.bad_json'))
      }
    } else if (type === 'number') {
      value = Number(text)
      if (text.trim() === '' || !isFinite(value)) return S.fieldError(valueField, t('kv.bad_number'))
    }
    var tags = S.$('kv-tags')
      .value.split(',')
      .map(function (s) {
        return s.trim()
      })
      .filter(Boolean)
    var key = keyField.value.trim()
    return store({ key: key, value: value, data_type: type, tags: tags, is_public: S.$('kv-public').checked, public_incr: counter })
      .then(function () {
        var links = (S.$('kv-public').checked ? ' ' + publicUrl(key) : '') + (counter ? ' ' + incrUrl(key) : '')
        S.status('kv-status', t('common.saved') + links, 'ok')
        return load()
      })
      .catch(function (e) {
        var field = S.$(FIELD_OF_CODE[e.body && e.body.error_code] || '')
        if (field) S.fieldError(field, e.message)
        else S.fail('kv-status')(e)
      })
  })
  S.$('kv-new').addEventListener('click', function () {
    S.$('kv-form').reset()
    S.fieldError(S.$('kv-key'), '')
    S.fieldError(S.$('kv-value'), '')
    S.fieldError(S.$('kv-type'), '')
    S.$('kv-key').focus()
  })
  load()
})()
