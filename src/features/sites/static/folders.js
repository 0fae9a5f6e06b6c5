// Folder projects: upload a whole folder (sub-folders kept: the multipart file name is the
// file's path inside the chosen folder), list projects, file tree, publish / unpublish.
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var el = S.el
  var bar = S.progress('folder-progress')
  var current = null
  // one request carries at most this many files / bytes (raised or lowered by /api/folders/limits)
  var batch = { files: 100, bytes: 32 * 1024 * 1024 }

  S.api
    .get('/api/folders/limits')
    .then(function (r) {
      var l = r.limits || r.data || r
      var files = l.max_files_per_request || l.max_files_per_batch || l.max_files
      var bytes = l.max_request_bytes || l.max_batch_bytes || l.max_total_bytes
      if (files > 0) batch.files = Math.min(files, 500)
      if (bytes > 0) batch.bytes = bytes
    })
    .catch(function () {})

  /** Paths of the files of a dropped folder, inside it (a dropped File has no webkitRelativePath). */
  var dropPaths = new WeakMap()
  /** The files of a folder dropped on the form, in place of the input's until it changes. */
  var dropped = null

  /** The path of a chosen file inside the chosen folder (its first segment is the folder). */
  function relPath(f) {
    if (dropPaths.has(f)) return dropPaths.get(f)
    var p = f.webkitRelativePath || f.name
    var i = p.indexOf('/')
    return i >= 0 ? p.slice(i + 1) : p
  }

  /**
   * Dotfiles and dot-folders (.env, .git/, caches) stay local, as `svc deploy` leaves them:
   * a repository folder chosen whole must not publish its history or secrets; .well-known/
   * is a site's own (security.txt, app links) and goes up. So do node_modules/ and __MACOSX/
   * folders at any depth (installed packages, a Mac zip's leftovers), as `svc deploy` leaves
   * them out (files.ts BUILTIN_RULES).
   */
  function staysLocal(p) {
    return p.split('/').some(function (seg) {
      return seg.charAt(0) === '.' && seg !== '.well-known'
    })
  }

  /** The node_modules/ or __MACOSX/ folder a path is in (its path, with its slash), or null. */
  function builtinFolder(p) {
    var segs = p.split('/')
    for (var i = 0; i < segs.length - 1; i++) {
      if (segs[i] === 'node_modules' || segs[i] === '__MACOSX') return segs.slice(0, i + 1).join('/') + '/'
    }
    return null
  }

  /**
   * Whether the chosen files are a Jekyll site's source, as `svc deploy` tells one
   * (jekyllSource, src/cli/client/site-links.ts): `_config.yml` at the root, no `.nojekyll`, and a root index.md or
   * index.markdown, or an index.html that starts with front matter. GitHub Pages builds such a
   * folder; uploaded as it is, its pages would show their templates.
   */
  function jekyllSource(chosen) {
    var root = {}
    chosen.forEach(function (f) {
      root[relPath(f)] = f
    })
    if (!root['_config.yml'] || root['.nojekyll']) return Promise.resolve(false)
    if (root['index.md'] || root['index.markdown']) return Promise.resolve(true)
    if (!root['index.html']) return Promise.resolve(false)
    return root['index.html']
      .slice(0, 16)
      .text()
      .then(
        function (head) {
          return /^\uFEFF?---[ \t]*\r?\n/.test(head)
        },
        function () {
          return false
        },
      )
  }

  /**
   * Whether the chosen files are the source of an app a bundler builds, as `svc deploy` tells
   * one (bundlerSource, src/cli/client/site-links.ts): the root index.html loads, as a module
   * script, a file of the folder that browsers do not run (.jsx, .tsx, .ts, .vue, .svelte), or
   * any file of the folder in a Vite project (a vite.config file, or a package.json whose build
   * script runs vite). Uploaded as it is, its pages would stay blank.
   */
  function bundlerSource(chosen) {
    var root = {}
    chosen.forEach(function (f) {
      root[relPath(f)] = f
    })
    if (!root['index.html']) return Promise.resolve(false)
    var read = function (name, max) {
      return root[name]
        ? root[name]
            .slice(0, max)
            .text()
            .catch(function () {
              return ''
            })
        : Promise.resolve('')
    }
    return Promise.all([read('index.html', 1 << 20), read('package.json', 1 << 20)]).then(function (texts) {
      var entries = []
      var re = /<script\b(?=[^>]*\stype\s*=\s*["']?module\b)[^>]*?\ssrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>'"]+))/gi
      var m
      while ((m = re.exec(texts[0])) !== null) {
        var src = (m[1] || m[2] || m[3] || '').trim().replace(/[?#][\s\S]*$/, '')
        if (src.indexOf('//') === 0 || /^[a-z][a-z0-9+.-]*:/i.test(src)) continue
        var rel
        try {
          // resolved as the browser would, from the folder's root page
          rel = decodeURIComponent(new URL(src, 'http://x/').pathname.slice(1))
        } catch (e) {
          continue
        }
        if (root[rel]) entries.push(rel)
      }
      if (!entries.length) return false
      if (
        entries.some(function (e) {
          return /\.(?:jsx|tsx|ts|mts|cts|vue|svelte)$/i.test(e)
        })
      )
        return true
      var configs = ['js', 'mjs', 'cjs', 'ts', 'mts', 'cts'].some(function (ext) {
        return !!root['vite.config.' + ext]
      })
      if (configs) return true
      try {
        var build = (JSON.parse(texts[1]).scripts || {}).build
        return typeof build === 'string' && /(?:^|[\s;&|/])vite(?:\s|$)/.test(build)
      } catch (e) {
        return false
      }
    })
  }

  // the project name follows the chosen folder, unless the user typed one of their own
  var autoName = ''
  /** Published state of each of the user's projects by name, from the last list. */
  var liveProjects = {}
  S.$('folder-input').addEventListener('change', function () {
    dropped = null
    var files = S.$('folder-input').files
    var current = S.$('folder-name').value
    if (files.length && (!current || current === autoName)) {
      var top = (files[0].webkitRelativePath || '').split('/')[0]
      S.$('folder-name').value = top
      autoName = top
    }
  })

  S.onSubmit(S.$('folder-form'), function () {
    var chosen = dropped || Array.prototype.slice.call(S.$('folder-input').files)
    var local = []
    var files = chosen.filter(function (f) {
      var p = relPath(f)
      var folder = builtinFolder(p)
      var keep = folder === null && !staysLocal(p)
      // a folder of packages is named once, not by its thousands of files
      if (!keep) local.push(folder !== null && !staysLocal(folder) ? folder : p)
      return keep
    })
    var name = S.$('folder-name').value.trim()
    if (!chosen.length) return S.status('folders-status', t('folders.pick_folder'), 'error')
    if (!files.length) return S.status('folders-status', t('folders.only_dotfiles'), 'error')
    if (!name) return S.status('folders-status', t('folders.pick_name'), 'error')
    return Promise.all([jekyllSource(chosen), bundlerSource(chosen)]).then(function (sources) {
      if (sources[0]) return S.status('folders-status', t('folders.jekyll_source'), 'error')
      if (sources[1]) return S.status('folders-status', t('folders.bundler_source'), 'error')
      return upload(files, local, name)
    })
  })

  /** Uploads the chosen folder's files (dotfiles left out: `local`) to the project `name`. */
  function upload(files, local, name) {
    // files uploaded into a live project are live at once: ask first
    if (liveProjects[name] && !window.confirm(t('folders.live_confirm', { name: name }))) return
    S.status('folders-status', '')
    // split into requests within the batch limits
    var batches = []
    var cur = []
    var size = 0
    files.forEach(function (f) {
      if (cur.length && (cur.length >= batch.files || size + f.size > batch.bytes)) {
        batches.push(cur)
        cur = []
        size = 0
      }
      cur.push(f)
      size += f.size
    })
    if (cur.length) batches.push(cur)
    var total =
      files.reduce(function (a, f) {
        return a + f.size
      }, 0) || 1
    var sent = 0
    var ok = 0
    var failed = []
    var warnings = []
    var cancelled = false
    var overwrite = S.$('folder-overwrite').checked ? 'true' : 'false'
    bar.show(name)
    var next = function () {
      var b = batches.shift()
      if (!b || cancelled) return finish()
      var fd = new FormData()
      b.forEach(function (f) {
        fd.append('files[]', f, relPath(f))
      })
      fd.append('overwrite_files', overwrite)
      var bytes = b.reduce(function (a, f) {
        return a + f.size
      }, 0)
      return S.send(
        'POST',
        '/api/folders/' + S.enc(name) + '/batch_upload',
        fd,
        function (loaded, all) {
          bar.set(sent + (loaded / all) * bytes, total)
        },
        bar.signal,
      )
        .then(
          function (r) {
            ok += r.uploaded_count || 0
            failed = failed.concat(r.failed_files || [])
            warnings = warnings.concat(r.warnings || [])
          },
          function (err) {
            // cancelled: a batch is stored whole or not at all, so this one is not; the rest stay unsent
            if (err.cancelled) {
              cancelled = true
              return
            }
            var body = err.body || {}
            if (typeof body.uploaded_count === 'number') {
              ok += body.uploaded_count
              failed = failed.concat(body.failed_files || [])
            } else {
              failed = failed.concat(b.map(relPath))
            }
            S.status('folders-status', err.message, 'error')
          },
        )
        .then(function () {
          sent += bytes
          return next()
        })
    }
    var finish = function () {
      var msg = t('folders.result', { ok: ok, failed: failed.length })
      if (cancelled) msg = t('folders.cancelled', { ok: ok })
      if (local.length) {
        var shown = local.filter(function (p, i) {
          return local.indexOf(p) === i
        })
        var names = shown.slice(0, 5).join(', ') + (shown.length > 5 ? ' …' : '')
        msg += '. ' + t('folders.left_out', { n: local.length, names: names })
      }
      bar.done(msg)
      warnings.sort(function (a, b) {
        return a.path < b.path ? -1 : a.path > b.path ? 1 : 0
      })
      if (cancelled) S.status('folders-status', msg, 'error', warnings)
      else if (failed.length) S.status('folders-status', msg + ': ' + failed.slice(0, 20).join(', ') + (failed.length > 20 ? ' …' : ''), 'error', warnings)
      else S.status('folders-status', msg, 'ok', warnings)
      S.$('folder-input').value = ''
      dropped = null
      loadProjects()
      // cancelled before anything went up: there may be no project to show
      if (!cancelled || ok > 0) show(name)
    }
    return next()
  }

  // a zip is a whole deploy (POST .../deploys, application/zip): one request, the server
  // unpacks it; the project name follows the zip's file name unless the user typed one
  var zipBar = S.progress('zip-progress')
  var zipAuto = ''
  /** The chosen or dropped zip (a drop cannot fill a file input in every browser). */
  var zipFile = null
  function chooseZip(f) {
    zipFile = f || null
    if (!zipFile) return
    if (!/\.zip$/i.test(zipFile.name)) {
      zipFile = null
      return S.status('folders-status', t('zip.not_zip'), 'error')
    }
    S.status('folders-status', '')
    var current = S.$('zip-name').value
    if (!current || current === zipAuto) {
      zipAuto = zipFile.name.replace(/\.zip$/i, '')
      S.$('zip-name').value = zipAuto
    }
  }
  /** Every file below a dropped folder's entry, each with its path inside the dropped folder. */
  function walkDir(dir, prefix, out) {
    var reader = dir.createReader()
    var children = []
    return new Promise(function (resolve, reject) {
      // readEntries answers in batches until an empty one
      var more = function () {
        reader.readEntries(function (batch) {
          if (batch.length) {
            children = children.concat(Array.prototype.slice.call(batch))
            return more()
          }
          resolve(undefined)
        }, reject)
      }
      more()
    }).then(function () {
      return Promise.all(
        children.map(function (c) {
          if (c.isDirectory) return walkDir(c, prefix + c.name + '/', out)
          return new Promise(function (resolve, reject) {
            c.file(function (f) {
              dropPaths.set(f, prefix + c.name)
              out.push(f)
              resolve(undefined)
            }, reject)
          })
        }),
      )
    })
  }

  // a folder dropped on the folder form is chosen as the picker chooses one; a zip dropped
  // there goes to the zip card
  var folderForm = S.$('folder-form')
  ;['dragenter', 'dragover'].forEach(function (ev) {
    folderForm.addEventListener(ev, function (e) {
      e.preventDefault()
      folderForm.classList.add('over')
    })
  })
  folderForm.addEventListener('dragleave', function () {
    folderForm.classList.remove('over')
  })
  folderForm.addEventListener('drop', function (e) {
    e.preventDefault()
    folderForm.classList.remove('over')
    var dt = e.dataTransfer
    if (!dt) return
    // entries are read while the event lasts; their files may come later
    var item = dt.items && dt.items.length === 1 ? dt.items[0] : null
    var entry = item && item.webkitGetAsEntry ? item.webkitGetAsEntry() : null
    if (!entry || !entry.isDirectory) {
      if (dt.files.length === 1 && /\.zip$/i.test(dt.files[0].name)) {
        chooseZip(dt.files[0])
        return S.$('zip-name').focus()
      }
      return S.status('folders-status', t('folders.drop_one'), 'error')
    }
    var out = []
    walkDir(entry, '', out).then(
      function () {
        dropped = out
        S.$('folder-input').value = ''
        var current = S.$('folder-name').value
        if (!current || current === autoName) {
          S.$('folder-name').value = entry.name
          autoName = entry.name
        }
        S.status('folders-status', t('folders.dropped', { name: entry.name, n: out.length }), 'ok')
      },
      function (err) {
        S.status('folders-status', String((err && err.message) || err), 'error')
      },
    )
  })

  S.$('zip-input').addEventListener('change', function () {
    chooseZip(S.$('zip-input').files[0])
  })
  S.dropZone(S.$('zip-drop'), function (files) {
    chooseZip(files[0])
  })

  S.onSubmit(S.$('zip-form'), function () {
    var name = S.$('zip-name').value.trim()
    if (!zipFile) return S.status('folders-status', t('zip.pick'), 'error')
    if (!name) return S.status('folders-status', t('folders.pick_name'), 'error')
    var preview = S.$('zip-preview').checked
    if (!preview && liveProjects[name] && !window.confirm(t('zip.live_confirm', { name: name }))) return
    S.status('folders-status', '')
    zipBar.show(name)
    var url = '/api/folders/' + S.enc(name) + '/deploys' + (preview ? '?preview=true' : '')
    // the file's own type varies by system (application/x-zip-compressed, or none): the body says zip
    var body = new Blob([zipFile], { type: 'application/zip' })
    return S.send(
      'POST',
      url,
      body,
      function (loaded, all) {
        zipBar.set(loaded, all)
      },
      zipBar.signal,
    ).then(
      function (r) {
        var d = r.deploy || {}
        var msg = t(d.is_preview ? 'zip.preview_done' : 'zip.done', { name: name, files: d.file_count })
        zipBar.done(msg)
        S.status('folders-status', msg, 'ok', r.warnings)
        zipFile = null
        S.$('zip-input').value = ''
        loadProjects()
        show(name)
      },
      function (err) {
        // a zip deploy is whole or nothing: a cancelled or refused one changed nothing
        var msg = err.cancelled ? t('common.upload_cancelled') : err.message
        zipBar.done(msg)
        S.status('folders-status', msg, 'error')
      },
    )
  })

  function siteUrl(name) {
    return S.data.contentOrigin + '/' + S.enc(S.data.user) + '/' + S.enc(name) + '/'
  }

  function loadProjects() {
    return S.api
      .get('/api/folders')
      .then(function (r) {
        var list = r.folders || (r.data && r.data.folders) || []
        liveProjects = {}
        list.forEach(function (p) {
          liveProjects[p.name] = !!p.is_published
        })
        var tbody = S.clear(S.$('projects-table').querySelector('tbody'))
        if (list.length === 0) S.emptyRow(tbody, t('folders.none'))
        list.forEach(function (p) {
          tbody.appendChild(
            S.row([
              el('button', {
                type: 'button',
                class: 'link',
                text: p.name,
                onclick: function () {
                  show(p.name, p)
                },
              }),
              el(
                'span',
                {},
                el('span', { class: 'badge' + (p.is_published ? ' on' : ''), text: p.is_published ? t('folders.published') : t('folders.unpublished') }),
                p.quarantined ? el('span', { class: 'badge held', text: t('common.quarantined') }) : null,
                p.user_site ? el('span', { class: 'badge on', text: t('folders.user_site_badge') }) : null,
              ),
              p.file_count === undefined ? '' : String(p.file_count),
              el(
                'div',
                { class: 'buttons' },
                el('button', {
                  type: 'button',
                  text: t('folders.open'),
                  onclick: function () {
                    show(p.name, p)
                  },
                }),
                p.is_published
                  ? el('a', {
                      href: p.site_url || p.website_url || siteUrl(p.name),
                      target: '_blank',
                      rel: 'noopener noreferrer',
                      text: t('folders.open_site'),
                    })
                  : null,
                p.is_published && !p.site_url ? el('small', { class: 'hint', text: ' ' + t('common.sandboxed') }) : null,
                p.is_published && p.origin_url
                  ? el('a', { href: S.safeUrl(p.origin_url) || '#', target: '_blank', rel: 'noopener noreferrer', text: t('folders.open_root') })
                  : null,
              ),
            ]),
          )
        })
      })
      .catch(function (e) {
        var tbody = S.clear(S.$('projects-table').querySelector('tbody'))
        S.emptyRow(tbody, e.status === 404 ? t('common.unavailable') : e.message)
      })
  }

  /** Builds a nested list from the flat file entries. */
  function tree(files) {
    var root = { dirs: {}, files: [] }
    files.forEach(function (f) {
      var parts = String(f.path || f.name).split('/')
      var node = root
      for (var i = 0; i < parts.length - 1; i++) {
        node = node.dirs[parts[i]] = node.dirs[parts[i]] || { dirs: {}, files: [] }
      }
      node.files.push({ name: parts[parts.length - 1], f: f })
    })
    function render(node) {
      var ul = el('ul')
      Object.keys(node.dirs)
        .sort()
        .forEach(function (d) {
          ul.appendChild(el('li', {}, el('details', { open: true }, el('summary', { text: d + '/' }), render(node.dirs[d]))))
        })
      node.files
        .sort(function (a, b) {
          return a.name < b.name ? -1 : 1
        })
        .forEach(function (x) {
          var href = x.f.url ? new URL(x.f.url, S.data.contentOrigin).href : null
          ul.appendChild(
            el(
              'li',
              {},
              href ? el('a', { href: href, target: '_blank', rel: 'noopener noreferrer', text: x.name }) : x.name,
              ' ',
              el('span', { class: 'size', text: S.bytes(x.f.size) }),
            ),
          )
        })
      return ul
    }
    return render(root)
  }

  /**
   * The project's state and links, from its API entry `p` (site_url, website_url, origin_url):
   * under its user's origin (or the sandboxed path form, said so), and at its own origin.
   */
  function setState(published, p) {
    current.published = published
    S.$('project-state').textContent = published === null ? '' : published ? t('folders.published') : t('folders.unpublished')
    var link = S.$('project-site')
    link.hidden = !published
    if (published) link.setAttribute('href', S.safeUrl((p && (p.site_url || p.website_url)) || siteUrl(current.name)) || '#')
    S.$('project-sandboxed').hidden = !published || !p || !!p.site_url
    var root = S.$('project-root')
    root.hidden = !published || !p || !p.origin_url
    S.$('project-root-hint').hidden = root.hidden
    if (!root.hidden) root.setAttribute('href', S.safeUrl(p.origin_url) || '#')
    S.$('project-publish').disabled = published === true
    S.$('project-unpublish').disabled = published === false
    if (p && p.user_site !== undefined) setUserSite(!!p.user_site, p.site_url ? originRoot(p.site_url) : null)
  }

  /** The root of the user's origin, from a URL on it (a project's site_url). */
  function originRoot(url) {
    try {
      return new URL(url).origin + '/'
    } catch (e) {
      return null
    }
  }

  /** Whether the shown project is the user site, with the address it answers at (null: none known). */
  function setUserSite(on, url) {
    current.userSite = on
    S.$('project-user-site-state').textContent = on ? t(url ? 'folders.is_user_site' : 'folders.is_user_site_here') : ''
    var link = S.$('project-user-site-link')
    link.hidden = !on || !url
    link.textContent = on && url ? url : ''
    if (!link.hidden) link.setAttribute('href', S.safeUrl(url) || '#')
    S.$('project-user-site').textContent = t(on ? 'folders.stop_user_site' : 'folders.make_user_site')
  }

  /** The project's kept deploys: live, preview and partial badges, a link to each, rollback / promote buttons. */
  function loadDeploys(name) {
    var tbody = S.clear(S.$('deploys-table').querySelector('tbody'))
    return S.api
      .get('/api/folders/' + S.enc(name) + '/deploys')
      .then(function (r) {
        if (!current || current.name !== name) return
        var list = r.deploys || []
        if (list.length === 0) S.emptyRow(tbody, t('deploys.none'))
        var liveAt = -1
        list.forEach(function (d, i) {
          if (d.is_live) liveAt = i
        })
        list.forEach(function (d, i) {
          var badge = d.is_live ? t('deploys.live') : d.is_preview ? t(d.promoted_at ? 'deploys.promoted' : 'deploys.preview') : ''
          // a deploy made by file-API writes (decision 159): a plain rollback skips it
          if (d.is_partial) badge = badge ? badge + ' · ' + t('deploys.partial') : t('deploys.partial')
          var action = null
          if (!d.is_live) {
            // older than the live one: a rollback; newer (a preview): a promote
            var label = liveAt >= 0 && i > liveAt ? t('deploys.rollback') : t('deploys.promote')
            action = el('button', {
              type: 'button',
              class: 'deploy-switch',
              'data-deploy': d.id,
              text: label,
              onclick: function () {
                S.api
                  .post('/api/folders/' + S.enc(name) + '/deploys/' + S.enc(d.id) + '/promote')
                  .then(function () {
                    S.status('folders-status', t('deploys.switched', { id: d.id }), 'ok')
                    loadDeploys(name)
                    loadProjects()
                  })
                  .catch(S.fail('folders-status'))
              },
            })
          }
          var view = S.data.contentOrigin + '/' + S.enc(S.data.user) + '/' + S.enc(name) + '@' + d.id + '/'
          tbody.appendChild(
            S.row([
              el(
                'span',
                {},
                el('code', { text: d.id }),
                badge ? ' ' : '',
                badge ? el('span', { class: 'badge' + (d.is_live ? ' on' : ''), text: badge }) : null,
              ),
              S.time(d.created_at),
              String(d.file_count) + ' · ' + S.bytes(d.bytes),
              d.source,
              d.message || '',
              el(
                'div',
                { class: 'buttons' },
                el('a', { href: S.safeUrl(view) || '#', target: '_blank', rel: 'noopener noreferrer', text: t('deploys.view') }),
                // the deploy as a .tar.gz that deploys it again (GET .../archive, the session's cookie)
                el('a', { href: '/api/folders/' + S.enc(name) + '/deploys/' + S.enc(d.id) + '/archive', download: '', text: t('deploys.download') }),
                d.preview_origin_url
                  ? el('a', {
                      href: S.safeUrl(d.preview_origin_url) || '#',
                      target: '_blank',
                      rel: 'noopener noreferrer',
                      class: 'deploy-root',
                      text: t('folders.open_root'),
                    })
                  : null,
                action,
              ),
            ]),
          )
        })
      })
      .catch(function (e) {
        S.emptyRow(tbody, e.status === 403 ? t('deploys.none') : e.message)
      })
  }

  /**
   * Shows project `name` in the panel. `field`: the name was typed there (Open a project by
   * name); the panel then appears only once the project's files answer, and a name that is
   * not one of the user's projects is refused at the field, with no panel and no buttons.
   */
  function show(name, info, field) {
    current = { name: name, published: null, userSite: false }
    setUserSite(false, null)
    S.$('project').hidden = !!field
    S.$('project-name').textContent = name
    setState(info ? !!info.is_published : null, info)
    var box = S.clear(S.$('project-tree'))
    box.appendChild(el('p', { class: 'hint', text: t('common.loading') }))
    if (!field) loadDeploys(name)
    return S.api
      .get('/api/folders/' + S.enc(name) + '/files')
      .then(function (r) {
        if (!current || current.name !== name) return
        S.$('project').hidden = false
        if (field) loadDeploys(name)
        S.clear(box).appendChild(tree(r.files || []))
        if (!info) {
          // the state comes from the project list when available
          S.api
            .get('/api/folders')
            .then(function (l) {
              var p = (l.folders || []).filter(function (x) {
                return x.name === name
              })[0]
              if (p && current.name === name) setState(!!p.is_published, p)
            })
            .catch(function () {})
        }
      })
      .catch(function (e) {
        if (!current || current.name !== name) return
        if (field && (e.status === 403 || e.status === 404)) {
          current = null
          S.fieldError(field, t('folders.no_such', { name: name }))
          return
        }
        S.$('project').hidden = false
        S.clear(box).appendChild(el('p', { class: 'error', text: e.message }))
      })
  }

  S.$('project-publish').addEventListener('click', function () {
    var name = current.name
    S.api
      .post('/api/folders/' + S.enc(name) + '/publish')
      .then(function (r) {
        setState(true, r)
        S.status('folders-status', r.message || t('folders.published'), 'ok')
        loadProjects()
        loadDeploys(name)
      })
      .catch(S.fail('folders-status'))
  })
  // the user site: one project of the user's answers the root of their origin (PUT), or none (DELETE)
  S.$('project-user-site').addEventListener('click', function () {
    var name = current.name
    var url = '/api/folders/' + S.enc(name) + '/user_site'
    ;(current.userSite ? S.api.del(url) : S.api.put(url))
      .then(function (r) {
        if (!current || current.name !== name) return
        setUserSite(!!r.user_site, r.user_site_url)
        S.status('folders-status', r.message, 'ok')
        loadProjects()
      })
      .catch(S.fail('folders-status'))
  })
  S.$('project-unpublish').addEventListener('click', function () {
    var name = current.name
    S.api
      .post('/api/folders/' + S.enc(name) + '/unpublish')
      .then(function (r) {
        setState(false)
        S.status('folders-status', r.message || t('folders.unpublished'), 'ok')
        loadProjects()
      })
      .catch(S.fail('folders-status'))
  })
  // as Netlify asks: the project's name typed again, since nothing brings it back
  S.$('project-delete').addEventListener('click', function () {
    var name = current.name
    var typed = window.prompt(t('folders.delete_prompt', { name: name }))
    if (typed === null) return
    if (typed.trim() !== name) {
      S.status('folders-status', t('folders.delete_mismatch', { name: name }), 'error')
      return
    }
    S.api
      .del('/api/folders/' + S.enc(name))
      .then(function () {
        current = null
        S.$('project').hidden = true
        S.status('folders-status', t('folders.deleted', { name: name }), 'ok')
        loadProjects()
      })
      .catch(S.fail('folders-status'))
  })
  S.onSubmit(S.$('open-form'), function () {
    var field = S.$('open-name')
    S.fieldError(field, '')
    return show(field.value.trim(), null, field)
  })
  loadProjects()
})()
