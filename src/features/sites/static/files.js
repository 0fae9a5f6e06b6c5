// Single files: drag-and-drop upload with progress, list with search and paging, open, delete.
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var el = S.el
  var state = { page: 1, per_page: 20, search: '' }
  var bar = S.progress('file-progress')
  /** The largest file the server takes (upload/info's max_file_size); null until it is known. */
  var maxSize = null

  function info() {
    return S.api
      .get('/svc_api/upload/info')
      .then(function (r) {
        var d = r.data
        maxSize = d.max_file_size
        S.$('files-quota').textContent = t('files.quota', { count: d.current_file_count, max: d.max_files_per_user, size: S.bytes(d.max_file_size) })
      })
      .catch(function () {})
  }
  var infoLoaded = info()

  // only the latest load renders: an earlier search's answer that comes back last is dropped
  var seq = 0
  function load() {
    var mine = ++seq
    var search = state.search
    return S.api
      .get('/svc_api/files' + S.qs(state))
      .then(function (r) {
        if (mine !== seq) return
        var d = r.data
        var tbody = S.clear(S.$('files-table').querySelector('tbody'))
        if (d.files.length === 0) S.emptyRow(tbody, search ? t('files.no_match', { search: search }) : t('files.none'))
        d.files.forEach(function (f) {
          tbody.appendChild(
            S.row([
              // the page on the user's own origin when there is one; the sandboxed path form otherwise
              el(
                'span',
                {},
                el('a', { href: f.site_url || f.url, target: '_blank', rel: 'noopener noreferrer', text: f.file_name }),
                f.site_url ? null : el('small', { class: 'hint', text: ' ' + t('common.sandboxed') }),
                f.quarantined ? el('span', { class: 'badge held', text: t('common.quarantined') }) : null,
              ),
              f.project_name,
              S.bytes(f.file_size),
              S.time(f.updated_at || f.created_at),
              el(
                'div',
                { class: 'buttons' },
                el('button', {
                  type: 'button',
                  text: t('common.copy'),
                  'aria-label': t('common.copy') + ' ' + f.file_name,
                  onclick: function () {
                    S.copy(f.site_url || f.url)
                  },
                }),
                el('button', {
                  type: 'button',
                  class: 'danger',
                  text: t('common.delete'),
                  'aria-label': t('common.delete') + ' ' + f.file_name,
                  onclick: function () {
                    remove(f)
                  },
                }),
              ),
            ]),
          )
        })
        S.pager('files-pager', d.page, d.total_pages, function (p) {
          state.page = p
          load()
        })
      })
      .catch(S.fail('files-status'))
  }

  function remove(f) {
    if (!window.confirm(t('files.delete_confirm', { name: f.file_name }))) return
    S.api
      .del('/svc_api/files/' + S.enc(f.file_name))
      .then(function () {
        S.toast(t('common.deleted'))
        info()
        return load()
      })
      .catch(S.fail('files-status'))
  }

  /** Why a file is not taken, in the page's words: over the size limit (known before sending). */
  function tooLarge(f) {
    return t('files.too_large', { name: f.name, max: S.bytes(maxSize) })
  }

  /**
   * Uploads files one after another, each with its progress; resolves once all are done. A file
   * over the limit is refused here, before any of its bytes are sent; the server's refusal of
   * one (its limit changed since the page loaded) reads the same, with the new limit.
   */
  function uploadAll(files) {
    var list = Array.prototype.slice.call(files)
    if (list.length === 0) return
    S.status('files-status', '')
    // a result of an earlier upload is not this one's
    bar.hide()
    return infoLoaded.then(function () {
      var total = list.length
      var done = 0
      var errors = []
      // the server's warnings of the pages that went up (a form that would lose its file), in upload order
      var warnings = []
      var cancelled = false
      var next = function () {
        if (list.length === 0 || cancelled) {
          if (cancelled) {
            var msg = t('files.cancelled', { done: done, total: total })
            bar.done(msg)
            S.status('files-status', [msg].concat(errors).join('\n'), 'error', warnings)
          } else if (errors.length === 0) {
            bar.done(total === 1 ? t('common.uploaded') : t('files.result', { done: done, total: total }))
            S.status('files-status', t('common.uploaded'), 'ok', warnings)
          } else {
            // nothing went up: no bar saying "uploaded"; the reasons are in the status line
            if (done === 0) bar.hide()
            else bar.done(t('files.result', { done: done, total: total }))
            S.status('files-status', errors.join('\n'), 'error', warnings)
          }
          state.page = 1
          info()
          return load()
        }
        var f = list.shift()
        if (maxSize !== null && f.size > maxSize) {
          errors.push(tooLarge(f))
          return next()
        }
        var fd = new FormData()
        fd.append('file', f, f.name)
        var project = S.$('file-project').value.trim()
        var description = S.$('file-description').value.trim()
        if (project) fd.append('project_name', project)
        if (description) fd.append('description', description)
        bar.show(f.name)
        return S.send('POST', '/svc_api/upload', fd, bar.set, bar.signal)
          .then(
            function (r) {
              done++
              warnings = warnings.concat((r && r.warnings) || [])
            },
            function (e) {
              // cancelled: this file is not stored and the ones after it are not sent
              if (e.cancelled) cancelled = true
              else if (e.body.error_code === 1104)
                // the server's limit (it may have changed since the page loaded), in the page's words
                return info().then(function () {
                  errors.push(maxSize !== null ? tooLarge(f) : f.name + ': ' + e.message)
                })
              else errors.push(f.name + ': ' + e.message)
            },
          )
          .then(next)
      }
      return next()
    })
  }

  S.onSubmit(S.$('upload-form'), function () {
    var work = uploadAll(S.$('file-input').files)
    S.$('file-input').value = ''
    return work
  })
  S.dropZone(S.$('drop'), uploadAll)
  var timer = null
  S.$('file-search').addEventListener('input', function () {
    clearTimeout(timer)
    timer = setTimeout(function () {
      state.search = S.$('file-search').value.trim()
      state.page = 1
      load()
    }, 300)
  })
  load()
})()
