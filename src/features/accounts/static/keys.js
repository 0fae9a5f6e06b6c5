// /api-keys: create (shown once, optionally read-only), list, enable / disable, delete; the 10-key limit.
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var el = S.el
  var limit = 10

  function load() {
    return S.api
      .get('/svc_api/api-keys')
      .then(function (r) {
        var keys = r.data.keys
        limit = r.data.limit || 10
        var tbody = S.clear(S.$('keys-table').querySelector('tbody'))
        if (keys.length === 0) S.emptyRow(tbody, t('keys.none'))
        var now = Date.now()
        keys.forEach(function (k) {
          var expired = k.expires_at !== null && k.expires_at <= now
          tbody.appendChild(
            S.row([
              k.name,
              el('code', { text: 'svc_…' + k.hint }),
              S.time(k.created_at),
              k.last_used_at ? S.time(k.last_used_at) : t('keys.not_used'),
              k.expires_at === null ? t('keys.never') : [S.time(k.expires_at), expired ? el('span', { class: 'badge', text: ' ' + t('keys.expired') }) : null],
              el('span', { class: 'badge key-access', text: k.read_only ? t('keys.access.read_only') : t('keys.access.full') }),
              el('span', { class: 'badge' + (k.enabled ? ' on' : ''), text: k.enabled ? t('common.yes') : t('common.no') }),
              el(
                'div',
                { class: 'buttons' },
                el('button', {
                  type: 'button',
                  text: k.enabled ? t('keys.disable') : t('keys.enable'),
                  'aria-label': (k.enabled ? t('keys.disable') : t('keys.enable')) + ' ' + k.name,
                  onclick: function () {
                    toggle(k)
                  },
                }),
                el('button', {
                  type: 'button',
                  class: 'danger',
                  text: t('common.delete'),
                  'aria-label': t('common.delete') + ' ' + k.name,
                  onclick: function () {
                    remove(k)
                  },
                }),
              ),
            ]),
          )
        })
        var full = keys.length >= limit
        S.$('key-submit').disabled = full
        S.$('key-limit').textContent = full ? t('keys.limit_reached', { limit: limit }) : t('keys.limit', { count: keys.length, limit: limit })
        S.$('key-limit').className = full ? 'hint error' : 'hint'
      })
      .catch(S.fail('keys-status'))
  }

  function toggle(k) {
    S.api
      .post('/svc_api/api-keys/' + S.enc(k.id) + '/' + (k.enabled ? 'disable' : 'enable'))
      .then(function () {
        S.toast(t('common.saved'))
        return load()
      })
      .catch(S.fail('keys-status'))
  }
  function remove(k) {
    if (!window.confirm(t('keys.delete_confirm', { name: k.name }))) return
    S.api
      .del('/svc_api/api-keys/' + S.enc(k.id))
      .then(function () {
        S.toast(t('common.deleted'))
        return load()
      })
      .catch(S.fail('keys-status'))
  }

  S.onSubmit(S.$('key-form'), function () {
    var days = S.$('key-days').value.trim()
    // no expires_days = never expires
    var body = { name: S.$('key-name').value.trim() }
    if (days !== '') body.expires_days = Number(days)
    if (S.$('key-readonly').checked) body.read_only = true
    S.status('keys-status', '')
    return S.api
      .post('/svc_api/api-keys', body)
      .then(function (r) {
        S.$('new-key').hidden = false
        var input = S.$('new-key-value')
        input.value = r.data.key
        input.focus()
        input.select()
        return load()
      })
      .catch(function (err) {
        if (err.body && err.body.error_code === 1207) S.status('keys-status', t('keys.limit_reached', { limit: limit }), 'error')
        else S.fail('keys-status')(err)
      })
  })
  S.$('new-key-copy').addEventListener('click', function () {
    S.copy(S.$('new-key-value').value)
  })
  load()
})()
