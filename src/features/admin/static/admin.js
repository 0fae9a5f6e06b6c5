// The admin console (/admin...): fills the page frames from the admin API. Same rules as every
// page script: the DOM is built from text only, and every write sends the CSRF token (common.js).
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var el = S.el
  /**
   * @param {string} id
   * @returns {any}
   */
  var $ = function (id) {
    return document.getElementById(id)
  }
  var page = S.data.adminPage

  /** A value's label in the page's language (message `prefix + value`), else the value itself. */
  function named(prefix, value) {
    var label = t(prefix + value)
    return label === prefix + value ? String(value) : label
  }

  function button(label, onclick, attrs) {
    return el('button', Object.assign({ type: 'button', text: label, onclick: onclick }, attrs || {}))
  }

  /**
   * Where focus is in a table's rows (the row's `attr` and the button's place in it), taken
   * before an action re-renders the table, which would drop focus on <body> and send a
   * keyboard user back to the top of the page.
   */
  function placeOf(attr) {
    var b = document.activeElement
    var row = b ? b.closest('tr[' + attr + ']') : null
    return row ? { attr: attr, key: row.getAttribute(attr), index: Array.prototype.indexOf.call(row.querySelectorAll('button'), b) } : null
  }
  /** Puts focus back: the button at that place in the same row, else (the row left the list) the status line saying what happened. */
  function refocus(body, place, statusId) {
    if (!place || (document.activeElement && document.activeElement !== document.body)) return
    var row = Array.prototype.filter.call(body.querySelectorAll('tr[' + place.attr + ']'), function (r) {
      return r.getAttribute(place.attr) === place.key
    })[0]
    var buttons = row ? row.querySelectorAll('button') : []
    var target = buttons.length > 0 ? buttons[Math.min(place.index, buttons.length - 1)] : $(statusId)
    if (!row) target.setAttribute('tabindex', '-1')
    target.focus()
  }

  // accounts ---------------------------------------------------------------------------------
  function users() {
    var current = 1
    var body = $('users-table').querySelector('tbody')
    // only the latest load renders: an earlier search's answer that comes back last is dropped
    var seq = 0
    function load(p) {
      current = p
      var mine = ++seq
      var q = $('users-q').value.trim()
      return S.api
        .get('/svc_api/admin/users?page=' + p + '&per_page=50' + (q ? '&search=' + S.enc(q) : ''))
        .then(function (r) {
          if (mine !== seq) return
          S.clear(body)
          var d = r.data
          if (d.users.length === 0) S.emptyRow(body, t('admin.users.none'))
          d.users.forEach(function (u) {
            body.appendChild(userRow(u))
          })
          S.pager('users-pager', p, Math.ceil(d.total / d.per_page), load)
          S.status('users-status', '')
        })
        .catch(S.fail('users-status'))
    }
    function change(u, patch) {
      var place = placeOf('data-user')
      return S.api
        .post('/svc_api/admin/users/' + S.enc(u.username), patch)
        .then(function (r) {
          S.toast(t('common.saved'))
          // a quota set below what the account holds: said where it stays (the list's reload clears its status line)
          var over = (r.data && r.data.over) || []
          return load(current).then(function () {
            if (over.length === 0) return
            var list = over
              .map(function (o) {
                return o.quota + ' ' + o.used + ' > ' + o.limit
              })
              .join(', ')
            S.status('users-status', t('admin.users.over', { name: u.username, list: list }))
          })
        })
        .then(function () {
          refocus(body, place, 'users-status')
        })
        .catch(S.fail('users-status'))
    }
    function userRow(u) {
      var state = u.pending ? t('admin.users.state.pending') : u.disabled ? t('admin.users.state.disabled') : t('admin.users.state.active')
      var us = u.usage || {}
      var usage = t('admin.users.usage', {
        files: us.files || 0,
        file_bytes: S.bytes(us.file_bytes || 0),
        folders: us.folders || 0,
        folder_bytes: S.bytes(us.folder_bytes || 0),
        kv: us.kv_keys || 0,
        images: us.images || 0,
        image_bytes: S.bytes(us.image_bytes || 0),
        data: us.hosted_files || 0,
      })
      var overrides = Object.keys(u.limits || {})
        .map(function (k) {
          return k + '=' + u.limits[k]
        })
        .join(', ')
      var select = el(
        'select',
        { 'aria-label': t('admin.users.limit.name') + ' (' + u.username + ')' },
        (S.data.quotaNames || []).map(function (n) {
          return el('option', { value: n, text: n + ' (' + u.quotas[n] + ')' })
        }),
      )
      var value = el('input', {
        type: 'number',
        min: '0',
        // the admin API's largest quota: the browser refuses more before sending it
        max: String(S.data.quotaMax),
        step: '1',
        inputmode: 'numeric',
        'aria-label': t('admin.users.limit.value') + ' (' + u.username + ')',
      })
      var limitForm = el(
        'form',
        {
          class: 'inline',
          onsubmit: function (e) {
            e.preventDefault()
            var v = value.value.trim()
            var limits = {}
            limits[select.value] = v === '' ? null : Number(v)
            change(u, { limits: limits })
          },
        },
        select,
        value,
        el('button', { type: 'submit', text: t('admin.users.limit.set') }),
      )
      var actions = el(
        'div',
        { class: 'buttons' },
        button(u.tier === 'vip' ? t('admin.users.unvip') : t('admin.users.vip'), function () {
          change(u, { tier: u.tier === 'vip' ? 'authenticated' : 'vip' })
        }),
        u.disabled
          ? button(u.pending ? t('admin.users.approve') : t('admin.users.enable'), function () {
              change(u, { disabled: false })
            })
          : button(t('admin.users.disable'), function () {
              if (window.confirm(t('admin.users.confirm_disable', { name: u.username }))) change(u, { disabled: true })
            }),
        button(t('admin.users.keys'), function () {
          showKeys(u.username, true)
        }),
        button(
          t('admin.users.delete'),
          function () {
            // the confirm step: the account's name typed again, as GitHub asks
            var typed = window.prompt(t('admin.users.confirm_delete', { name: u.username }), '')
            if (typed === null) return
            if (typed.trim().toLowerCase() !== u.username) {
              S.status('users-status', t('admin.users.delete_mismatch', { name: u.username }), 'error')
              return
            }
            S.api
              .del('/svc_api/admin/users/' + S.enc(u.username))
              .then(function () {
                return load(current)
              })
              .then(function () {
                S.status('users-status', t('admin.users.deleted', { name: u.username }), 'ok')
              })
              .catch(S.fail('users-status'))
          },
          { class: 'danger' },
        ),
      )
      return S.row([u.username + (u.is_admin ? ' (' + t('admin.users.admin') + ')' : ''), u.tier, state, usage, [overrides, limitForm], actions], {
        'data-user': u.username,
      })
    }
    // one account's keys, in the panel below the list; only the latest load renders
    var keysBody = $('keys-table').querySelector('tbody')
    var keysSeq = 0
    function showKeys(name, opened) {
      var mine = ++keysSeq
      $('keys-title').textContent = t('admin.keys.title', { name: name })
      $('keys-panel').hidden = false
      if (opened) {
        S.status('keys-status', '')
        S.clear(keysBody)
        $('keys-title').focus()
      }
      return S.api
        .get('/svc_api/admin/users/' + S.enc(name) + '/keys')
        .then(function (r) {
          if (mine !== keysSeq) return
          S.clear(keysBody)
          if (r.data.keys.length === 0) S.emptyRow(keysBody, t('admin.keys.none'))
          r.data.keys.forEach(function (k) {
            keysBody.appendChild(keyRow(name, k))
          })
        })
        .catch(S.fail('keys-status'))
    }
    function keyRow(name, k) {
      var expired = k.expires_at !== null && k.expires_at <= Date.now()
      var revoke = button(
        t('admin.keys.revoke'),
        function () {
          if (!window.confirm(t('admin.keys.confirm_revoke', { key: k.name, hint: k.hint, name: name }))) return
          var place = placeOf('data-key')
          S.api
            .del('/svc_api/admin/users/' + S.enc(name) + '/keys/' + S.enc(k.id))
            .then(function () {
              // what was revoked stays named in the status line, as the reports' actions do
              S.status('keys-status', t('admin.keys.done', { key: k.name, hint: k.hint, name: name }), 'ok')
              return showKeys(name, false)
            })
            .then(function () {
              refocus(keysBody, place, 'keys-status')
            })
            .catch(S.fail('keys-status'))
        },
        { class: 'danger' },
      )
      // a key's name is its owner's text: it runs in <bdi>, so direction marks cannot reorder the row
      return S.row(
        [
          el('bdi', { text: k.name }),
          el('code', { text: 'svc_…' + k.hint }),
          k.read_only ? t('admin.keys.access.read_only') : t('admin.keys.access.full'),
          S.time(k.created_at),
          k.last_used_at ? S.time(k.last_used_at) : t('admin.keys.not_used'),
          k.expires_at === null ? t('admin.keys.never') : [S.time(k.expires_at), expired ? ' ' + t('admin.keys.expired') : ''],
          k.enabled ? t('common.yes') : t('common.no'),
          el('div', { class: 'buttons' }, revoke),
        ],
        { 'data-key': k.id },
      )
    }
    var timer = null
    $('users-q').addEventListener('input', function () {
      clearTimeout(timer)
      timer = setTimeout(function () {
        load(1)
      }, 250)
    })
    $('users-search').addEventListener('submit', function (e) {
      e.preventDefault()
      load(1)
    })
    $('invite-create').addEventListener('click', function () {
      S.api
        .post('/svc_api/admin/invites', {})
        .then(function (r) {
          $('invite-code').value = r.data.code
          $('invite-box').hidden = false
          $('invite-hint').hidden = false
        })
        .catch(S.fail('users-status'))
    })
    load(1)
  }

  // abuse reports ----------------------------------------------------------------------------
  function reports() {
    var body = $('reports-table').querySelector('tbody')
    var current = 1
    // only the latest load renders: an older answer (another filter, before an action) is dropped
    var seq = 0
    function load(p) {
      current = p
      var mine = ++seq
      var st = $('reports-filter').value
      return S.api
        .get('/svc_api/admin/reports?page=' + p + '&per_page=50' + (st ? '&status=' + S.enc(st) : ''))
        .then(function (r) {
          if (mine !== seq) return
          S.clear(body)
          var d = r.data
          if (d.reports.length === 0) S.emptyRow(body, t('admin.reports.none'))
          d.reports.forEach(function (x) {
            body.appendChild(reportRow(x))
          })
          S.pager('reports-pager', p, Math.ceil(d.total / d.per_page), load)
        })
        .catch(S.fail('reports-status'))
    }
    // what an action did, named with the report's URL, stays in the status line (replacing an
    // earlier error) until the next action: a toast would vanish before a changed site is checked
    function act(x, action, payload) {
      var place = placeOf('data-report')
      return S.api
        .post('/svc_api/admin/reports/' + S.enc(x.id) + '/' + action, payload)
        .then(function () {
          var disabled = action === 'takedown' && payload && payload.disable_account
          var key = 'admin.reports.done.' + (disabled ? 'takedown_disabled' : action)
          S.status('reports-status', t(key, { url: x.url, name: x.owner || '' }), 'ok')
          return load(current)
        })
        .then(function () {
          refocus(body, place, 'reports-status')
        })
        .catch(S.fail('reports-status'))
    }
    function reportRow(x) {
      var buttons = []
      var disable = el('input', { type: 'checkbox', 'aria-label': t('admin.reports.disable_account') })
      if (x.status === 'open' || x.status === 'restored')
        buttons.push(
          button(t('admin.reports.quarantine'), function () {
            if (window.confirm(t('admin.reports.confirm_quarantine'))) act(x, 'quarantine')
          }),
        )
      if (x.status === 'quarantined')
        buttons.push(
          button(t('admin.reports.restore'), function () {
            act(x, 'restore')
          }),
        )
      if (x.status === 'open' || x.status === 'quarantined' || x.status === 'restored') {
        buttons.push(
          button(t('admin.reports.takedown'), function () {
            // the question names what the click does: with the box ticked, the account goes too
            var ask = disable.checked ? t('admin.reports.confirm_takedown_disable', { name: x.owner || '' }) : t('admin.reports.confirm_takedown')
            if (window.confirm(ask)) act(x, 'takedown', { disable_account: disable.checked })
          }),
        )
        buttons.push(el('label', { class: 'check' }, disable, ' ' + t('admin.reports.disable_account')))
      }
      if (x.status === 'taken_down')
        buttons.push(
          button(t('admin.reports.lift'), function () {
            act(x, 'lift')
          }),
        )
      if (x.status === 'open')
        buttons.push(
          button(t('admin.reports.dismiss'), function () {
            // a dismissed report cannot be reopened: asked first, as the other actions on a report are
            if (window.confirm(t('admin.reports.confirm_dismiss'))) act(x, 'dismiss')
          }),
        )
      // a reporter's text runs in <bdi>: its direction marks (U+202E...) cannot reorder the rest.
      // A heuristic report's details are its reasons; rows stored before that carried the
      // English source label themselves, which the localised one replaces
      var details = el('span', {}, [
        x.source === 'heuristic' ? t('admin.reports.source.heuristic') + ': ' : '',
        el('bdi', { text: x.source === 'heuristic' ? x.details.replace(/^flagged at upload: /, '') : x.details }),
        x.contact ? ' — ' : '',
        x.contact ? el('bdi', { text: x.contact }) : '',
      ])
      var link = S.safeUrl(x.url)
        ? el('a', { href: x.url, rel: 'noopener noreferrer', target: '_blank' }, [el('bdi', { text: x.url })])
        : el('bdi', { text: x.url })
      var owner = x.owner ? el('bdi', { text: x.owner }) : '—'
      // the codes in the page's words (a code the page does not know is shown as it is)
      var category = named('abuse.category.', x.category)
      var state = named('admin.reports.status.', x.status)
      return S.row([S.time(x.created_at), link, owner, category, details, state, el('div', { class: 'buttons' }, buttons)], { 'data-report': x.id })
    }
    // the status shown is in the address (?status=), so a reload or a link keeps it
    var filter = $('reports-filter')
    var asked = new URLSearchParams(location.search).get('status')
    if (
      asked !== null &&
      Array.prototype.some.call(filter.options, function (o) {
        return o.value === asked
      })
    )
      filter.value = asked
    filter.addEventListener('change', function () {
      var u = new URL(location.href)
      u.searchParams.set('status', filter.value)
      history.replaceState(null, '', u.pathname + u.search)
      S.status('reports-status', '')
      load(1)
    })
    S.onSubmit($('case-form'), function () {
      return S.api
        .post('/svc_api/admin/reports', { url: $('case-url').value.trim(), category: $('case-category').value })
        .then(function (r) {
          $('case-url').value = ''
          filter.value = 'open'
          history.replaceState(null, '', location.pathname + '?status=open')
          S.status('reports-status', t('admin.reports.done.open', { url: r.data.url }), 'ok')
          load(1)
        })
        .catch(S.fail('reports-status'))
    })
    load(1)
  }

  // content search ---------------------------------------------------------------------------
  function content() {
    var body = $('content-table').querySelector('tbody')
    $('content-form').addEventListener('submit', function (e) {
      e.preventDefault()
      var q = []
      ;[
        ['user', 'content-user'],
        ['url', 'content-url'],
        ['name', 'content-name'],
        ['hash', 'content-hash'],
      ].forEach(function (p) {
        var v = $(p[1]).value.trim()
        if (v) q.push(p[0] + '=' + S.enc(v))
      })
      S.api
        .get('/svc_api/admin/content?' + q.join('&'))
        .then(function (r) {
          S.clear(body)
          var items = r.data.items
          if (items.length === 0) S.emptyRow(body, t('admin.content.none'))
          items.forEach(function (i) {
            var name = i.kind === 'folder' ? i.name + '/' + i.path : i.path ? i.name + ' (' + i.path + ')' : i.name
            // held or not, and whether these bytes were taken down elsewhere (a live copy)
            var state = [el('span', { class: 'badge' + (i.hold ? ' held' : ''), text: t('admin.content.state.' + (i.hold || 'live')) })]
            if (i.blocked) state.push(' ', el('span', { class: 'badge held', text: t('admin.content.state.blocked') }))
            body.appendChild(
              S.row([named('admin.content.kind.', i.kind), i.username, name, state, S.bytes(i.size), el('code', { text: i.digest }), S.time(i.updated_at), '']),
            )
          })
          S.status('content-status', '')
        })
        .catch(S.fail('content-status'))
    })
  }

  // settings ---------------------------------------------------------------------------------
  function settings() {
    var box = $('settings-fields')
    var inputs = {}
    S.api
      .get('/svc_api/admin/settings')
      .then(function (r) {
        r.data.settings.forEach(function (s) {
          var id = 'setting-' + s.name
          var input
          if (s.name === 'registration')
            input = el(
              'select',
              { id: id },
              ['open', 'pending', 'invite', 'closed'].map(function (m) {
                return el('option', { value: m, text: t('admin.setting.registration.' + m), selected: m === s.value })
              }),
            )
          else if (s.name === 'brand_words') input = el('textarea', { id: id, rows: '3', value: s.value, spellcheck: 'false' })
          else input = el('input', { id: id, value: s.value, maxlength: '300', spellcheck: 'false' })
          inputs[s.name] = input
          // the page's language when it knows the setting, the service's description otherwise
          var label = t('admin.setting.' + s.name)
          var known = label !== 'admin.setting.' + s.name
          box.appendChild(el('label', { for: id, text: known ? label : s.name }))
          box.appendChild(input)
          box.appendChild(el('p', { class: 'hint', text: known ? t('admin.setting.' + s.name + '.help') : s.description }))
        })
      })
      .catch(S.fail('settings-status'))
    S.onSubmit($('settings-form'), function () {
      var patch = {}
      Object.keys(inputs).forEach(function (k) {
        patch[k] = inputs[k].value
      })
      return S.api
        .post('/svc_api/admin/settings', patch)
        .then(function (r) {
          Object.keys(r.data.settings).forEach(function (k) {
            if (inputs[k]) inputs[k].value = r.data.settings[k]
          })
          S.status('settings-status', t('common.saved'), 'ok')
        })
        .catch(S.fail('settings-status'))
    })
  }

  // audit log --------------------------------------------------------------------------------
  function audit() {
    var body = $('audit-table').querySelector('tbody')
    var more = $('audit-more')
    var next = null
    function load() {
      S.api
        .get('/svc_api/admin/audit?limit=100' + (next ? '&before=' + S.enc(next) : ''))
        .then(function (r) {
          var d = r.data
          if (!next && d.entries.length === 0) S.emptyRow(body, t('admin.audit.none'))
          d.entries.forEach(function (e) {
            body.appendChild(
              S.row([
                S.time(e.at),
                e.actor + ' (' + e.via + ')',
                e.action,
                e.target,
                e.ip + (e.user_agent ? ' · ' + e.user_agent : ''),
                el('code', { text: JSON.stringify(e.details) }),
              ]),
            )
          })
          next = d.next
          more.hidden = !next
        })
        .catch(S.fail('audit-status'))
    }
    more.addEventListener('click', load)
    load()
  }

  // health -------------------------------------------------------------------------------------
  function health() {
    var checks = $('health-checks').querySelector('tbody')
    var facts = $('health-facts').querySelector('tbody')
    // a state in words, coloured as the console's badges are: green ok, grey degraded, red otherwise
    function tone(state) {
      return 'badge' + (state === 'ok' ? ' on' : state === 'degraded' ? '' : ' held')
    }
    // the two largest units: "3 d 4 h", "4 h 5 min", "5 min"
    function duration(seconds) {
      var m = Math.floor(seconds / 60)
      var v = { d: Math.floor(m / 1440), h: Math.floor(m / 60) % 24, m: m % 60 }
      return t('admin.health.duration.' + (v.d > 0 ? 'd' : v.h > 0 ? 'h' : 'm'), v)
    }
    // BACKUP_EVERY in the largest unit that divides it, as it is written (30m, 6h, 1d, 90s):
    // an interval under a minute, or not a whole number of minutes, is never rounded away
    function every(seconds) {
      var unit = seconds % 86400 === 0 ? 'd' : seconds % 3600 === 0 ? 'h' : seconds % 60 === 0 ? 'm' : 's'
      return t('admin.health.every.' + unit, { n: seconds / { d: 86400, h: 3600, m: 60, s: 1 }[unit] })
    }
    var seq = 0
    function load() {
      var mine = ++seq
      S.api
        .get('/svc_api/admin/health')
        .then(function (r) {
          if (mine !== seq) return
          var d = r.data
          var overall = $('health-overall')
          overall.textContent = t('admin.health.status.' + d.status)
          overall.className = tone(d.status)
          $('health-checked').textContent = t('admin.health.checked', { time: S.time(d.checked_at) })
          S.clear(checks)
          d.checks.forEach(function (c) {
            // 'ok', 'timeout' or 'error: <message>': the word, and the message in full
            var kind = c.result === 'ok' ? 'ok' : c.result === 'timeout' ? 'timeout' : 'error'
            var detail = [kind === 'error' ? el('code', { text: c.result.replace(/^error: /, '') }) : '', kind === 'error' ? ' ' : '']
            detail.push(el('span', { class: 'hint', text: t(c.required ? 'admin.health.required' : 'admin.health.optional') }))
            checks.appendChild(
              S.row([named('admin.health.check.', c.name), el('span', { class: tone(kind), text: t('admin.health.result.' + kind) }), detail, ''], {
                'data-check': c.name,
              }),
            )
          })
          var b = d.backups
          var backups = !b.destination
            ? t('admin.health.backups.off')
            : !b.scheduled
              ? t('admin.health.backups.ignored')
              : t('admin.health.backups.on', { every: every(b.every_seconds), dest: b.destination, keep: b.keep }) +
                (b.destination.indexOf('s3://') === 0
                  ? ''
                  : ' · ' + (b.last_at ? t('admin.health.backups.last', { time: S.time(b.last_at) }) : t('admin.health.backups.none_yet')))
          var db = t('admin.health.engine.' + d.database.engine)
          if (d.database.pending_commits !== null) db += ' · ' + t('admin.health.pending', { n: d.database.pending_commits })
          var rows = [
            ['version', t('admin.health.version'), t('admin.health.version_value', { version: d.version, api: d.api_version })],
            ['node', t('admin.health.node'), d.node],
            ['pid', t('admin.health.pid'), String(d.pid)],
            ['started', t('admin.health.started'), t('admin.health.started_value', { time: S.time(d.started_at), uptime: duration(d.uptime_seconds) })],
            ['database', t('admin.health.database'), db],
            ['storage', t('admin.health.storage'), named('admin.health.storage.', d.storage.kind)],
            [
              'memory',
              t('admin.health.memory'),
              t('admin.health.memory_value', {
                rss: S.bytes(d.memory.rss_bytes),
                heap: S.bytes(d.memory.heap_used_bytes),
                total: S.bytes(d.memory.heap_total_bytes),
              }),
            ],
          ]
          d.disks.forEach(function (k) {
            rows.push([
              'disk-' + k.what,
              t('admin.health.disk.' + k.what),
              k.error === null
                ? t('admin.health.disk_value', { free: S.bytes(k.free_bytes), total: S.bytes(k.total_bytes), path: k.path })
                : t('admin.health.disk_error', { error: k.error }),
            ])
          })
          rows.push(['backups', t('admin.health.backups'), backups])
          S.clear(facts)
          rows.forEach(function (x) {
            facts.appendChild(S.row([x[1], x[2], ''], { 'data-fact': x[0] }))
          })
          S.status('health-status', '')
        })
        .catch(S.fail('health-status'))
    }
    $('health-refresh').addEventListener('click', load)
    load()
  }

  var pages = { users: users, reports: reports, content: content, settings: settings, audit: audit, health: health }
  if (pages[page]) pages[page]()
})()
