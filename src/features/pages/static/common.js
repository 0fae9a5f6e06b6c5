// Shared helpers of the service's pages (no build step, no dependencies).
// Rules: the DOM is built from text only (textContent, attributes), never parsed as HTML (the
// page's CSP enforces Trusted Types, so HTML sinks throw). Every write sends the session's
// CSRF token in X-CSRF-Token.
;(function () {
  'use strict'
  var data = JSON.parse(document.getElementById('svc-data').textContent)
  var meta = document.querySelector('meta[name="csrf-token"]')
  var csrf = meta ? meta.getAttribute('content') : ''
  var lang = data.lang === 'en' ? 'en' : 'zh'
  var locale = lang === 'en' ? 'en' : 'zh-CN'

  /** A message of the page's language, with {placeholders} filled; own keys only, else the key. */
  function t(key, params) {
    if (!Object.prototype.hasOwnProperty.call(data.messages, key)) return key
    var s = data.messages[key]
    return s.replace(/\{(\w+)\}/g, function (m, n) {
      return params && n in params ? String(params[n]) : m
    })
  }

  /** Only http(s) and same-origin links (never javascript: or data:). */
  function safeUrl(u) {
    if (typeof u !== 'string' || u === '') return null
    try {
      var url = new URL(u, location.href)
      return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null
    } catch (e) {
      return null
    }
  }

  /**
   * Builds an element: el('a', {href: url, class: 'x', text: 'label', onclick: fn}, child...).
   * Children are nodes or strings (inserted as text).
   * @param {string} tag
   * @param {Object<string, any>} [attrs]
   * @returns {any}
   */
  function el(tag, attrs, ...children) {
    var node = document.createElement(tag)
    attrs = attrs || {}
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k]
      if (v === undefined || v === null || v === false) return
      if (k === 'text') node.textContent = String(v)
      else if (k === 'class') node.className = v
      else if (k.slice(0, 2) === 'on' && typeof v === 'function') node.addEventListener(k.slice(2), v)
      else if (k === 'href' || k === 'src') {
        var safe = safeUrl(v)
        if (safe) node.setAttribute(k, safe)
      } else if (k === 'checked' || k === 'disabled' || k === 'hidden' || k === 'selected' || k === 'readOnly') node[k] = !!v
      else if (k === 'value') /** @type {HTMLInputElement} */ (node).value = String(v)
      else if (/^(on|style$|srcdoc$|formaction$)/i.test(k)) throw new Error('refused attribute ' + k)
      else node.setAttribute(k, v === true ? '' : String(v))
    })
    children.forEach(function (c) {
      append(node, c)
    })
    return node
  }
  function append(node, c) {
    if (c === null || c === undefined || c === false) return
    if (Array.isArray(c))
      c.forEach(function (x) {
        append(node, x)
      })
    else node.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)))
  }
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild)
    return node
  }
  var $ = function (id) {
    return document.getElementById(id)
  }

  /** An error from the API, carrying its message, status and body. */
  function ApiError(status, body, cancelled) {
    var msg = body && typeof body.message === 'string' ? body.message : t('common.error') + ' (' + status + ')'
    if (body && typeof body.solution === 'string' && body.solution) msg += ' — ' + body.solution
    if (status === 401) msg = t('common.session_ended')
    if (cancelled) msg = t('common.upload_cancelled')
    this.message = msg
    this.status = status
    this.body = body || {}
    /** The user stopped the request (an upload's cancel button): nothing of it was answered. */
    this.cancelled = !!cancelled
  }
  ApiError.prototype = Object.create(Error.prototype)

  /**
   * The session is gone (logged out in another tab, expired, revoked): every API call answers
   * 401 from now on, so the page says so and goes to the login page, which brings the user back
   * here. Done here, for every call, whatever its caller does with the error; once per page.
   */
  var leaving = false
  function sessionEnded() {
    if (leaving) return
    leaving = true
    toast(t('common.session_ended'))
    setTimeout(function () {
      location.href = '/login?next=' + encodeURIComponent(location.pathname + location.search)
    }, 1500)
  }

  /**
   * One API call with the session cookie over XHR (so uploads can report progress).
   * body: FormData, a Blob (sent as it is, Content-Type its type), a JS value (sent as JSON) or undefined. Resolves to the parsed JSON body;
   * rejects with ApiError when success is false or the status is not 2xx. signal (an
   * AbortSignal, such as a progress bar's): its abort stops the request, which then rejects
   * with an ApiError whose `cancelled` is true.
   */
  function send(method, url, body, onProgress, signal) {
    return new Promise(function (resolve, reject) {
      if (signal && signal.aborted) return reject(new ApiError(0, null, true))
      var xhr = new XMLHttpRequest()
      xhr.open(method, url)
      xhr.setRequestHeader('Accept', 'application/json')
      xhr.setRequestHeader('Accept-Language', locale)
      if (method !== 'GET' && method !== 'HEAD') xhr.setRequestHeader('X-CSRF-Token', csrf)
      var payload = null
      if (body instanceof FormData) payload = body
      else if (body instanceof Blob) {
        // a file sent as the body itself (a zip deploy), with its own type
        payload = body
        if (body.type) xhr.setRequestHeader('Content-Type', body.type)
      } else if (body !== undefined) {
        payload = JSON.stringify(body)
        xhr.setRequestHeader('Content-Type', 'application/json')
      }
      if (onProgress && xhr.upload) {
        xhr.upload.addEventListener('progress', function (e) {
          if (e.lengthComputable) onProgress(e.loaded, e.total)
        })
      }
      xhr.addEventListener('load', function () {
        var json
        try {
          json = JSON.parse(xhr.responseText)
        } catch (e) {
          json = null
        }
        if (xhr.status === 401) sessionEnded()
        if (xhr.status >= 200 && xhr.status < 300 && (!json || json.success !== false)) resolve(json || {})
        else reject(new ApiError(xhr.status, json))
      })
      xhr.addEventListener('error', function () {
        reject(new ApiError(0, null))
      })
      xhr.addEventListener('abort', function () {
        reject(new ApiError(0, null, true))
      })
      if (signal)
        signal.addEventListener('abort', function () {
          xhr.abort()
        })
      xhr.send(payload)
    })
  }
  var api = {
    get: function (url) {
      return send('GET', url)
    },
    post: function (url, body, p) {
      return send('POST', url, body === undefined ? {} : body, p)
    },
    put: function (url, body) {
      return send('PUT', url, body)
    },
    patch: function (url, body) {
      return send('PATCH', url, body)
    },
    del: function (url) {
      return send('DELETE', url)
    },
  }

  /** Query string from an object, leaving out empty values. */
  function qs(o) {
    var p = new URLSearchParams()
    Object.keys(o).forEach(function (k) {
      if (o[k] !== undefined && o[k] !== null && o[k] !== '') p.set(k, String(o[k]))
    })
    var s = p.toString()
    return s ? '?' + s : ''
  }

  var toastTimer = null
  function toast(msg) {
    var box = $('toast')
    box.textContent = msg
    box.classList.add('show')
    clearTimeout(toastTimer)
    toastTimer = setTimeout(function () {
      box.classList.remove('show')
    }, 2500)
  }
  /**
   * Shows a message in a status line; kind 'ok' or 'error'. `warnings`: the server's warnings
   * of the pages an upload put up ([{path, message}], each naming its page and what to fix),
   * under the message: a heading and a line each, in the same live region.
   */
  function status(id, msg, kind, warnings) {
    var s = $(id)
    if (!s) return
    s.textContent = msg || ''
    s.className = 'status' + (kind ? ' ' + kind : '')
    if (!warnings || !warnings.length) return
    s.appendChild(el('span', { class: 'warning', text: t('common.warnings', { n: warnings.length }) }))
    warnings.forEach(function (w) {
      s.appendChild(el('span', { class: 'warning', text: w.message }))
    })
  }
  /** Shows an error (ApiError or other) in a status line. */
  function fail(id) {
    return function (e) {
      status(id, e && e.message ? e.message : t('common.error'), 'error')
    }
  }

  /**
   * Shows why a field of a script-driven form is refused, as the server-rendered forms do (the
   * sign-up form): the message in a `p.error.field-error` right after the field (id
   * `{field id}-error`), the field `aria-invalid` and described by the message before its hint,
   * and focused. An empty msg takes the mark away, as does the next change of the field.
   */
  function fieldError(field, msg) {
    var id = field.id + '-error'
    var line = $(id)
    var others = (field.getAttribute('aria-describedby') || '').split(' ').filter(function (x) {
      return x && x !== id
    })
    if (!msg) {
      if (line) line.remove()
      field.removeAttribute('aria-invalid')
      if (others.length) field.setAttribute('aria-describedby', others.join(' '))
      else field.removeAttribute('aria-describedby')
      return
    }
    if (!line) {
      line = el('p', { class: 'error field-error', id: id })
      field.insertAdjacentElement('afterend', line)
    }
    line.textContent = msg
    field.setAttribute('aria-invalid', 'true')
    field.setAttribute('aria-describedby', [id].concat(others).join(' '))
    field.addEventListener(
      'input',
      function () {
        fieldError(field, '')
      },
      { once: true },
    )
    field.focus()
  }

  function copy(text) {
    function fallback() {
      var ta = el('textarea', { class: 'sr', readOnly: true, value: text })
      document.body.appendChild(ta)
      ta.select()
      var ok
      try {
        ok = document.execCommand('copy')
      } catch (e) {
        ok = false
      }
      ta.remove()
      toast(ok ? t('common.copied') : t('common.copy_failed'))
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () {
        toast(t('common.copied'))
      }, fallback)
    } else fallback()
  }

  /** A size for people: bytes in binary units (16777216: "16 MiB"), as the limits are set. */
  function bytes(n) {
    if (typeof n !== 'number' || !isFinite(n)) return ''
    if (n < 1024) return n + ' B'
    var units = ['KiB', 'MiB', 'GiB', 'TiB']
    var v = n
    var i = -1
    do {
      v /= 1024
      i++
    } while (v >= 1024 && i < units.length - 1)
    return (v >= 10 ? v.toFixed(0) : v.toFixed(1).replace(/\.0$/, '')) + ' ' + units[i]
  }
  /**
   * A time from the API, shown in the browser's time zone and the page's language, whatever
   * form it came in: epoch ms or seconds, ISO 8601 with an offset or Z (microseconds too), or
   * the spec's "YYYY-MM-DD HH:MM:SS", which is Beijing time. Unreadable text is shown as is.
   */
  function time(v) {
    if (v === null || v === undefined || v === '') return ''
    if (typeof v === 'number') return new Date(v < 1e11 ? v * 1000 : v).toLocaleString(locale)
    var s = String(v)
    // the spec's form has no zone: Beijing time (UTC+8)
    if (/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(s)) s = s.replace(' ', 'T') + '+08:00'
    // at most milliseconds: Date.parse is only specified for three fraction digits
    var d = new Date(s.replace(/(\.\d{3})\d+/, '$1'))
    return isNaN(d.getTime()) ? s : d.toLocaleString(locale)
  }

  /**
   * A progress bar block: show(name), set(loaded,total), done(), hide(). While shown, its
   * cancel button aborts `signal` (a fresh one per show), which the upload's requests carry
   * (send's signal): the request under way stops and the caller sends no more.
   */
  function progress(id) {
    var box = $(id)
    var bar = box.querySelector('progress')
    var label = box.querySelector('span')
    var cancel = /** @type {HTMLButtonElement | null} */ (box.querySelector('button.cancel'))
    var ctl = null
    var p = {
      signal: null,
      show: function (name) {
        box.hidden = false
        bar.value = 0
        label.textContent = t('common.uploading', { name: name })
        ctl = new AbortController()
        p.signal = ctl.signal
        if (cancel) cancel.hidden = false
      },
      set: function (loaded, total) {
        bar.value = total ? Math.round((loaded / total) * 100) : 0
      },
      done: function (msg) {
        if (!(ctl && ctl.signal.aborted)) bar.value = 100
        label.textContent = msg || t('common.uploaded')
        if (cancel) cancel.hidden = true
      },
      hide: function () {
        box.hidden = true
        if (cancel) cancel.hidden = true
      },
    }
    if (cancel)
      cancel.addEventListener('click', function () {
        if (ctl) ctl.abort()
        cancel.hidden = true
        // the button goes away: keyboard focus goes back to the upload's form, not the page's top
        var form = box.closest('form')
        var submit = /** @type {HTMLElement | null} */ (form && form.querySelector('[type=submit]'))
        if (submit) submit.focus()
      })
    return p
  }

  /**
   * Renders previous / next paging into a <nav>; onGo(page). A page past the last one that
   * still has items (its last item was deleted, or moved out of the filter) goes to the last
   * page instead: an empty page with no way back would read as "nothing left".
   */
  function pager(id, page, totalPages, onGo) {
    if (totalPages >= 1 && page > totalPages) return onGo(totalPages)
    var nav = clear($(id))
    nav.hidden = !(totalPages > 1)
    if (nav.hidden) return
    nav.appendChild(
      el('button', {
        type: 'button',
        text: t('common.prev'),
        disabled: page <= 1,
        onclick: function () {
          onGo(page - 1)
        },
      }),
    )
    nav.appendChild(el('span', { text: t('common.page', { page: page, pages: totalPages }) }))
    nav.appendChild(
      el('button', {
        type: 'button',
        text: t('common.next'),
        disabled: page >= totalPages,
        onclick: function () {
          onGo(page + 1)
        },
      }),
    )
  }

  /** A table row from cells (nodes or text). */
  function row(cells, attrs) {
    return el(
      'tr',
      attrs || {},
      cells.map(function (c) {
        return el('td', {}, c)
      }),
    )
  }
  /** A one-cell row spanning the table, for "nothing yet". */
  function emptyRow(tbody, msg) {
    var cols = tbody.parentNode.querySelectorAll('thead th').length || 1
    tbody.appendChild(el('tr', {}, el('td', { colspan: cols, class: 'hint', text: msg })))
  }

  /** Turns a drop zone into a file source: onFiles(FileList). */
  function dropZone(zone, onFiles) {
    ;['dragenter', 'dragover'].forEach(function (ev) {
      zone.addEventListener(ev, function (e) {
        e.preventDefault()
        zone.classList.add('over')
      })
    })
    ;['dragleave', 'drop'].forEach(function (ev) {
      zone.addEventListener(ev, function () {
        zone.classList.remove('over')
      })
    })
    zone.addEventListener('drop', function (e) {
      e.preventDefault()
      if (e.dataTransfer && e.dataTransfer.files.length) onFiles(e.dataTransfer.files)
    })
  }

  /** Saves a text (or a Blob) as a download. */
  function download(name, text, type) {
    var url = URL.createObjectURL(new Blob([text], { type: type }))
    var a = el('a', { download: name })
    a.href = url
    document.body.appendChild(a)
    a.click()
    a.remove()
    setTimeout(function () {
      URL.revokeObjectURL(url)
    }, 10000)
  }

  /**
   * One submit of a form at a time: a second Enter or click while the first submit's work runs
   * is dropped before any handler sees it, so nothing is created or sent twice. A form a page
   * script handles (onSubmit) is busy until the promise its handler returns settles; a form the
   * browser posts itself (log in, sign up) is busy until the page is left, or shown again from
   * the back-forward cache.
   */
  var busy = new WeakSet()
  document.addEventListener(
    'submit',
    function (e) {
      if (!busy.has(e.target)) return
      e.preventDefault()
      e.stopImmediatePropagation()
    },
    true,
  )
  document.addEventListener('submit', function (e) {
    if (!e.defaultPrevented) busy.add(e.target)
  })
  window.addEventListener('pageshow', function (e) {
    if (e.persisted) busy = new WeakSet()
  })
  /** Handles a form's submits with fn(event), which returns the promise of its work (or nothing). */
  function onSubmit(form, fn) {
    form.addEventListener('submit', function (e) {
      e.preventDefault()
      var work = fn(e)
      if (!work || typeof work.then !== 'function') return
      busy.add(form)
      form.setAttribute('aria-busy', 'true')
      var done = function () {
        busy.delete(form)
        form.removeAttribute('aria-busy')
      }
      work.then(done, done)
    })
  }

  /** The redeem form of a feature's page; `feature` is the page's own (image-host, hosted-data). */
  function redeemForm(statusId, onDone, feature) {
    var form = /** @type {HTMLFormElement} */ ($('redeem-form'))
    onSubmit(form, function () {
      return api
        .post('/api/redeem', { code: /** @type {HTMLInputElement} */ ($('redeem-code')).value.trim() })
        .then(function (r) {
          // a code of another feature activates that one: say which, so nobody waits for this page
          var other = feature && r && r.feature && r.feature !== feature
          status(statusId, other ? t('redeem.other', { feature: t('feature.' + r.feature) }) : t('redeem.done'), other ? 'error' : 'ok')
          form.reset()
          onDone()
        })
        .catch(fail(statusId))
    })
    return form
  }

  /**
   * Keyboard focus in the lists. A list's script draws its rows again after an action on a row
   * (delete, a toggle, a save), and the focused control goes with its old row: focus would fall
   * back to the page's top. Once a list has been drawn again, focus goes to the control that
   * stands for it: the same item's (the same accessible name), else in the row now at its place
   * the control with the same text (the next row's Delete), else the one at the same place in
   * that row (Disable became Enable); in a list left empty, the table. Unless focus has moved
   * on, or the page's own script has put it somewhere (this runs after that script's turn).
   */
  var CONTROLS = 'button, a[href], input, select, textarea, [tabindex="0"]'
  /** @param {Element} root @returns {HTMLElement[]} */
  function controlsOf(root) {
    return Array.prototype.filter.call(root.querySelectorAll(CONTROLS), function (c) {
      return !c.disabled && !c.hidden
    })
  }
  /** @type {{ el: HTMLElement, tbody: HTMLTableSectionElement, row: number, pos: number, label: string | null, text: string | null } | null} */
  var lastInList = null
  document.addEventListener('focusin', function (e) {
    var target = /** @type {HTMLElement} */ (e.target)
    var tr = /** @type {HTMLTableRowElement | null} */ (target.closest ? target.closest('tbody > tr') : null)
    if (!tr || !tr.parentElement) {
      lastInList = null
      return
    }
    var tbody = /** @type {HTMLTableSectionElement} */ (tr.parentElement)
    lastInList = {
      el: target,
      tbody: tbody,
      row: tr.sectionRowIndex,
      pos: controlsOf(tr).indexOf(target),
      label: target.getAttribute('aria-label'),
      text: target.textContent,
    }
  })
  function refocusList() {
    var last = lastInList
    var now = document.activeElement
    if (!last || last.el.isConnected || (now && now !== document.body && now !== last.tbody.parentElement)) return
    var all = controlsOf(last.tbody)
    var target = last.label
      ? all.filter(function (c) {
          return c.tagName === last.el.tagName && c.getAttribute('aria-label') === last.label
        })[0]
      : null
    var rows = last.tbody.rows
    var row = rows.length ? rows[Math.min(last.row, rows.length - 1)] : null
    var inRow = row ? controlsOf(row) : []
    if (!target && last.text)
      target = inRow.filter(function (c) {
        return c.tagName === last.el.tagName && c.textContent === last.text
      })[0]
    if (!target && last.pos >= 0 && inRow.length) target = inRow[Math.min(last.pos, inRow.length - 1)]
    if (!target) {
      // nothing left to act on: the (now empty) table itself
      var table = /** @type {HTMLElement | null} */ (last.tbody.parentElement)
      if (!table || now === table) return
      table.setAttribute('tabindex', '-1')
      target = table
    }
    target.focus()
  }
  if (typeof MutationObserver === 'function') {
    var redrawn = new MutationObserver(function () {
      setTimeout(refocusList, 0)
    })
    document.querySelectorAll('tbody').forEach(function (tbody) {
      redrawn.observe(tbody, { childList: true })
    })
  }

  /**
   * A table wider than its box (.table-wrap, on a phone or with long values) scrolls in it; one
   * with nothing to focus in it (a log) could not be scrolled from the keyboard. While the box
   * overflows it is a named region in the tab order, which the arrow keys scroll; once the
   * table fits again it leaves the tab order.
   */
  function keyboardScroll(wrap) {
    var over = wrap.scrollWidth > wrap.clientWidth + 1
    if (over === wrap.hasAttribute('tabindex')) return
    if (over) {
      wrap.setAttribute('tabindex', '0')
      wrap.setAttribute('role', 'region')
      wrap.setAttribute('aria-label', t('common.table_scrolls'))
    } else {
      wrap.removeAttribute('tabindex')
      wrap.removeAttribute('role')
      wrap.removeAttribute('aria-label')
    }
  }
  if (typeof ResizeObserver === 'function') {
    // the box changes with the window, the table with the rows a script puts in
    var boxes = new ResizeObserver(function (entries) {
      entries.forEach(function (e) {
        var wrap = e.target.closest('.table-wrap')
        if (wrap) keyboardScroll(wrap)
      })
    })
    document.querySelectorAll('.table-wrap').forEach(function (wrap) {
      boxes.observe(wrap)
      if (wrap.firstElementChild) boxes.observe(wrap.firstElementChild)
    })
  }

  window.SVC = {
    data: data,
    lang: lang,
    t: t,
    el: el,
    clear: clear,
    $: $,
    api: api,
    send: send,
    qs: qs,
    toast: toast,
    status: status,
    fail: fail,
    fieldError: fieldError,
    copy: copy,
    bytes: bytes,
    time: time,
    progress: progress,
    pager: pager,
    row: row,
    emptyRow: emptyRow,
    dropZone: dropZone,
    download: download,
    safeUrl: safeUrl,
    ApiError: ApiError,
    enc: encodeURIComponent,
    redeemForm: redeemForm,
    onSubmit: onSubmit,
  }
})()
