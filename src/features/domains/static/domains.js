// Domains and visitor access: add a custom domain (with the TXT record to create), verify,
// make it its project's primary one, remove; set a visitor password or an expiry on a
// project or page, list, remove.
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var el = S.el

  function record(d) {
    return d.verification.name + '  TXT  "' + d.verification.value + '"'
  }

  function loadProjects() {
    return S.api.get('/api/folders').then(function (r) {
      var select = S.clear(S.$('dom-project'))
      var names = S.clear(S.$('acc-names'))
      ;(r.folders || []).forEach(function (f) {
        select.appendChild(el('option', { value: f.name, text: f.name }))
        names.appendChild(el('option', { value: f.name }))
      })
    })
  }

  function loadDomains() {
    return S.api
      .get('/api/domains')
      .then(function (r) {
        var d = r.data
        S.$('dom-usage').textContent = t('dom.usage', { count: d.domains.length, limit: d.limit })
        var tbody = S.clear(S.$('dom-table').querySelector('tbody'))
        if (d.domains.length === 0) S.emptyRow(tbody, t('dom.none'))
        d.domains.forEach(function (it) {
          tbody.appendChild(
            S.row([
              el('code', { text: it.domain }),
              it.project,
              it.primary ? t('dom.primary') : it.verified ? t('dom.verified') : it.lost_at ? t('dom.lost') : t('dom.pending'),
              it.verified ? '' : el('code', { class: 'mono dns-record', text: record(it) }),
              el(
                'div',
                { class: 'buttons' },
                it.verified
                  ? null
                  : el('button', {
                      type: 'button',
                      class: 'primary',
                      text: t('dom.verify'),
                      'aria-label': t('dom.verify') + ' ' + it.domain,
                      onclick: function () {
                        verify(it)
                      },
                    }),
                it.verified
                  ? el('button', {
                      type: 'button',
                      text: it.primary ? t('dom.unset_primary') : t('dom.make_primary'),
                      'aria-label': (it.primary ? t('dom.unset_primary') : t('dom.make_primary')) + ' ' + it.domain,
                      onclick: function () {
                        setPrimary(it, !it.primary)
                      },
                    })
                  : el('button', {
                      type: 'button',
                      text: t('common.copy'),
                      'aria-label': t('common.copy') + ' ' + it.domain,
                      onclick: function () {
                        S.copy(record(it))
                      },
                    }),
                el('button', {
                  type: 'button',
                  class: 'danger',
                  text: t('common.delete'),
                  'aria-label': t('common.delete') + ' ' + it.domain,
                  onclick: function () {
                    removeDomain(it)
                  },
                }),
              ),
            ]),
          )
        })
      })
      .catch(S.fail('dom-status'))
  }

  function verify(it) {
    S.api
      .post('/api/domains/' + S.enc(it.domain) + '/verify')
      .then(function (r) {
        S.status('dom-status', t('dom.verified_ok', { domain: r.data.domain, project: r.data.project }), 'ok')
        return loadDomains()
      })
      .catch(S.fail('dom-status'))
  }

  /** Makes the domain its project's primary one (browsers opening the project's other URLs go there), or not. */
  function setPrimary(it, primary) {
    var url = '/api/domains/' + S.enc(it.domain) + '/primary'
    ;(primary ? S.api.put(url) : S.api.del(url))
      .then(function (r) {
        var key = r.data.primary ? 'dom.primary_ok' : 'dom.unprimary_ok'
        S.status('dom-status', t(key, { domain: r.data.domain, project: r.data.project }), 'ok')
        return loadDomains()
      })
      .catch(S.fail('dom-status'))
  }

  function removeDomain(it) {
    if (!window.confirm(t('dom.remove_confirm', { domain: it.domain }))) return
    S.api
      .del('/api/domains/' + S.enc(it.domain))
      .then(function () {
        S.toast(t('common.deleted'))
        return loadDomains()
      })
      .catch(S.fail('dom-status'))
  }

  function loadAccess() {
    return S.api
      .get('/api/access')
      .then(function (r) {
        var tbody = S.clear(S.$('acc-table').querySelector('tbody'))
        if (r.data.access.length === 0) S.emptyRow(tbody, t('acc.none'))
        r.data.access.forEach(function (a) {
          var expires = a.expires_at === null ? t('acc.never') : a.expired ? t('acc.expired', { time: S.time(a.expires_at) }) : S.time(a.expires_at)
          tbody.appendChild(
            S.row([
              el('code', { text: a.name }),
              a.password ? t('acc.yes') : t('acc.no'),
              expires,
              el(
                'div',
                { class: 'buttons' },
                el('button', {
                  type: 'button',
                  class: 'danger',
                  text: t('common.delete'),
                  'aria-label': t('common.delete') + ' ' + a.name,
                  onclick: function () {
                    removeAccess(a)
                  },
                }),
              ),
            ]),
          )
        })
      })
      .catch(S.fail('acc-status'))
  }

  function removeAccess(a) {
    if (!window.confirm(t('acc.remove_confirm', { name: a.name }))) return
    S.api
      .del('/api/access/' + S.enc(a.name))
      .then(function () {
        S.toast(t('common.deleted'))
        return loadAccess()
      })
      .catch(S.fail('acc-status'))
  }

  S.onSubmit(S.$('dom-form'), function () {
    return S.api
      .post('/api/domains', { domain: S.$('dom-domain').value.trim(), project: S.$('dom-project').value })
      .then(function () {
        S.status('dom-status', t('dom.added'), 'ok')
        S.$('dom-domain').value = ''
        return loadDomains()
      })
      .catch(S.fail('dom-status'))
  })

  S.onSubmit(S.$('acc-form'), function () {
    var body = {}
    var pw = S.$('acc-password').value
    if (S.$('acc-no-password').checked) body.password = null
    else if (pw !== '') body.password = pw
    var when = S.$('acc-expires').value
    // datetime-local is the visitor's local time: Date reads it so, toISOString sends UTC
    body.expires_at = when === '' ? null : new Date(when).toISOString()
    return S.api
      .put('/api/access/' + S.enc(S.$('acc-name').value.trim()), body)
      .then(function () {
        S.status('acc-status', t('common.saved'), 'ok')
        S.$('acc-password').value = ''
        return loadAccess()
      })
      .catch(S.fail('acc-status'))
  })

  loadProjects().catch(S.fail('dom-status'))
  loadDomains()
  loadAccess()
})()
