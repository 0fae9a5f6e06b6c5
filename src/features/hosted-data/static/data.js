// Hosted data: entitlement status, redeem a code, create, list, versions, set the default
// version, new version, copy the public link, delete.
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var el = S.el
  var bar = S.progress('data-progress')
  var redeem = S.redeemForm('data-status', status, 'hosted-data')
  var current = null

  function status() {
    return S.api
      .get('/api/hosted-data/status')
      .then(function (r) {
        var q = r.quota || {}
        S.$('data-state').textContent = r.entitled
          ? t('data.entitled') + ' ' + t('data.quota', { count: q.used_files, max: q.max_files, size: S.bytes(q.max_file_bytes), versions: q.max_versions })
          : t('data.not_entitled')
        redeem.hidden = !!r.entitled
        S.$('data-form').hidden = !r.entitled
        if (r.entitled) load()
      })
      .catch(function (e) {
        if (e.status === 403) {
          S.$('data-state').textContent = t('data.not_entitled')
          redeem.hidden = false
        } else S.fail('data-status')(e)
      })
  }

  function load() {
    return S.api
      .get('/api/hosted-data/files')
      .then(function (r) {
        var tbody = S.clear(S.$('data-table').querySelector('tbody'))
        var files = r.files || []
        if (files.length === 0) S.emptyRow(tbody, t('data.none'))
        files.forEach(function (f) {
          tbody.appendChild(
            S.row([
              el(
                'span',
                {},
                el('a', { href: f.public_url, target: '_blank', rel: 'noopener noreferrer', text: f.display_name }),
                f.quarantined ? el('span', { class: 'badge held', text: t('common.quarantined') }) : null,
              ),
              f.content_type,
              String(f.default_version),
              String(f.version_count),
              S.time(f.updated_at),
              el(
                'div',
                { class: 'buttons' },
                el('button', {
                  type: 'button',
                  text: t('data.details'),
                  'aria-label': t('data.details') + ' ' + f.display_name,
                  onclick: function () {
                    details(f.id)
                  },
                }),
                el('button', {
                  type: 'button',
                  text: t('data.copy'),
                  'aria-label': t('data.copy') + ' ' + f.display_name,
                  onclick: function () {
                    S.copy(f.public_url)
                  },
                }),
                el('button', {
                  type: 'button',
                  class: 'danger',
                  text: t('common.delete'),
                  disabled: !!f.locked,
                  'aria-label': t('common.delete') + ' ' + f.display_name,
                  onclick: function () {
                    remove(f)
                  },
                }),
              ),
            ]),
          )
        })
      })
      .catch(S.fail('data-status'))
  }

  function details(id) {
    return S.api
      .get('/api/hosted-data/files/' + S.enc(id))
      .then(function (r) {
        var f = r.file
        current = f
        S.$('data-detail').hidden = false
        S.$('data-detail-title').textContent = t('data.versions_of', { name: f.display_name })
        var tbody = S.clear(S.$('versions-table').querySelector('tbody'))
        ;(f.versions || []).forEach(function (v) {
          tbody.appendChild(
            S.row([
              String(v.version),
              S.bytes(v.size),
              S.time(v.created_at),
              v.is_default
                ? el('span', { class: 'badge on', text: t('data.is_default') })
                : el('button', {
                    type: 'button',
                    text: t('data.set_default'),
                    onclick: function () {
                      setDefault(f.id, v.version)
                    },
                  }),
            ]),
          )
        })
      })
      .catch(S.fail('data-status'))
  }

  function setDefault(id, version) {
    S.api
      .post('/api/hosted-data/files/' + S.enc(id) + '/default-version', { version: version })
      .then(function () {
        S.status('data-status', '')
        S.toast(t('common.saved'))
        load()
        return details(id)
      })
      .catch(S.fail('data-status'))
  }
  function remove(f) {
    if (!window.confirm(t('data.delete_confirm', { name: f.display_name }))) return
    S.api
      .del('/api/hosted-data/files/' + S.enc(f.id))
      .then(function () {
        S.toast(t('common.deleted'))
        if (current && current.id === f.id) S.$('data-detail').hidden = true
        return status()
      })
      .catch(S.fail('data-status'))
  }

  /**
   * The body of a create or a new version: a chosen file goes as it is, in a multipart file
   * part, so the server checks its bytes (strict UTF-8, a byte-order mark kept); reading it
   * with Blob.text() here would turn invalid bytes into U+FFFD and drop the BOM. Typed text
   * goes as JSON, checked here first when the type is JSON. Null: nothing to send.
   */
  function bodyOf(textId, fileId, type, fields) {
    var input = S.$(fileId)
    if (input.files.length) {
      var fd = new FormData()
      Object.keys(fields).forEach(function (k) {
        fd.append(k, String(fields[k]))
      })
      fd.append('file', input.files[0], input.files[0].name)
      return fd
    }
    var content = S.$(textId).value
    if (!checkJson(type, content)) return null
    return Object.assign({ content: content }, fields)
  }
  function checkJson(type, content) {
    if (!/json/.test(type)) return true
    try {
      JSON.parse(content)
      return true
    } catch (e) {
      S.status('data-status', t('data.bad_json'), 'error')
      return false
    }
  }

  S.onSubmit(S.$('data-form'), function () {
    var type = S.$('data-type').value
    var body = bodyOf('data-content', 'data-file', type, { display_name: S.$('data-name').value.trim(), content_type: type })
    if (!body) return
    bar.show(S.$('data-name').value)
    S.status('data-status', '')
    return S.send('POST', '/api/hosted-data/files', body, bar.set, bar.signal)
      .then(function (r) {
        bar.done()
        S.$('data-form').reset()
        status()
        if (r.file && r.file.id) details(r.file.id)
      })
      .catch(function (e) {
        bar.hide()
        S.fail('data-status')(e)
      })
  })

  S.onSubmit(S.$('version-form'), function () {
    if (!current) return
    var f = current
    var body = bodyOf('version-content', 'version-file', f.content_type || '', { set_default: S.$('version-default').checked })
    if (!body) return
    // a message of an earlier try (bad JSON, an error) goes once this one is sent
    S.status('data-status', '')
    return S.send('POST', '/api/hosted-data/files/' + S.enc(f.id) + '/versions', body)
      .then(function () {
        S.toast(t('common.saved'))
        S.$('version-form').reset()
        load()
        return details(f.id)
      })
      .catch(S.fail('data-status'))
  })
  status()
})()
