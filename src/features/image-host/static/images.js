// Images: entitlement status, redeem a code, upload with progress, copy link, remark,
// replace, delete (locked images cannot be deleted).
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var el = S.el
  var bar = S.progress('img-progress')
  var redeem = S.redeemForm('img-status', status, 'image-host')
  // the list is paged (the API answers at most 100 a page): every image stays reachable
  var state = { page: 1, per_page: 50 }
  // a thumbnail's box at 1x (app.css .gallery img: 10rem high, as wide as a column, at most
  // about 600px on a narrow screen's single column)
  var THUMB_W = 640
  var THUMB_H = 160

  function status() {
    return S.api
      .get('/api/image-host/status')
      .then(function (r) {
        var q = r.quota || {}
        S.$('img-state').textContent = r.entitled
          ? t('images.entitled') +
            ' ' +
            t('images.quota', {
              count: q.used_images,
              max: q.max_images,
              used: S.bytes(q.used_bytes),
              total: S.bytes(q.max_total_bytes),
              each: S.bytes(q.max_image_bytes),
            })
          : t('images.not_entitled')
        redeem.hidden = !!r.entitled
        S.$('img-form').hidden = !r.entitled
        if (r.entitled) load()
      })
      .catch(function (e) {
        // without the entitlement some servers refuse the status call itself
        if (e.status === 403) {
          S.$('img-state').textContent = t('images.not_entitled')
          redeem.hidden = false
        } else S.fail('img-status')(e)
      })
  }

  function load() {
    return S.api
      .get('/api/image-host/images?page=' + state.page + '&per_page=' + state.per_page)
      .then(function (r) {
        var pages = Math.ceil((r.total || 0) / state.per_page)
        // a page emptied by deletes: the pager moves to the last page that has images
        if (pages >= 1 && state.page > pages) {
          state.page = pages
          return load()
        }
        var list = S.clear(S.$('img-list'))
        var images = r.images || []
        if (images.length === 0) list.appendChild(el('li', { class: 'hint', text: t('images.none') }))
        images.forEach(function (img) {
          list.appendChild(item(img))
        })
        S.pager('img-pager', state.page, pages, function (p) {
          state.page = p
          load()
        })
      })
      .catch(S.fail('img-status'))
  }

  /**
   * The gallery picture of an image: a variant sized to its box (CSS: the column's width, at
   * most THUMB_W, by 10rem), with a 2x one for high-DPI screens; the original where it already
   * fits the box, and for SVG (no variants). The versioned link names these bytes: a replaced
   * image is never shown from the cache. A variant the server cannot make falls back to the
   * original.
   */
  function thumbnail(img) {
    var original = img.versioned_url || img.public_url
    var raster = img.content_type !== 'image/svg+xml'
    var at = function (scale) {
      var w = THUMB_W * scale
      var h = THUMB_H * scale
      if (!raster || (img.width > 0 && img.height > 0 && img.width <= w && img.height <= h)) return original
      return original + (original.indexOf('?') < 0 ? '?' : '&') + 'w=' + w + '&h=' + h + '&format=webp'
    }
    var one = at(1)
    var two = at(2)
    var pic = el('img', {
      src: one,
      srcset: two === one ? null : one + ' 1x, ' + two + ' 2x',
      alt: img.remark || img.file_name || '',
      loading: 'lazy',
      decoding: 'async',
    })
    var fellBack = one === original && two === original
    pic.addEventListener('error', function () {
      if (fellBack) return
      fellBack = true
      pic.removeAttribute('srcset')
      pic.src = original
    })
    return pic
  }

  function item(img) {
    var id = 'img-' + img.public_token
    var remark = el('input', { id: id + '-remark', maxlength: 500, value: img.remark || '' })
    var replace = el('input', { id: id + '-replace', type: 'file', accept: 'image/*', class: 'sr' })
    replace.addEventListener('change', function () {
      if (!replace.files.length) return
      var fd = new FormData()
      fd.append('file', replace.files[0], replace.files[0].name)
      bar.show(replace.files[0].name)
      S.status('img-status', '')
      S.send('POST', '/api/image-host/images/' + S.enc(img.public_token) + '/replace', fd, bar.set, bar.signal)
        .then(function () {
          // the bar's label says "Uploaded."; the status line, cleared when the upload began, stays empty
          bar.done()
          // the quota line and the list (thumbnails by their versioned link: the new bytes)
          return status()
        })
        .catch(function (e) {
          bar.hide()
          S.fail('img-status')(e)
        })
    })
    var pic = thumbnail(img)
    // each control is named after its picture: a screen reader hears "Delete cat.png", not "Delete" again and again
    var name = img.file_name || img.public_token
    // the remark is a form of its own: Enter in the field saves it, as its button does
    var remarkForm = el(
      'form',
      { class: 'remark' },
      el('label', { for: id + '-remark', text: t('images.remark') }),
      remark,
      el('div', { class: 'buttons' }, el('button', { type: 'submit', text: t('images.save_remark') })),
    )
    S.onSubmit(remarkForm, function () {
      return S.api
        .patch('/api/image-host/images/' + S.enc(img.public_token), { remark: remark.value })
        .then(function () {
          // the picture's text alternative is its remark (thumbnail): it follows the saved one
          img.remark = remark.value
          pic.setAttribute('alt', img.remark || img.file_name || '')
          S.toast(t('common.saved'))
        })
        .catch(S.fail('img-status'))
    })
    return el(
      'li',
      {},
      el('a', { href: img.public_url, target: '_blank', rel: 'noopener noreferrer' }, pic),
      el(
        'p',
        {},
        el('strong', { text: img.file_name || img.public_token }),
        ' ',
        el('span', { class: 'hint', text: S.bytes(img.size) }),
        img.locked ? el('span', { class: 'badge', text: ' ' + t('images.locked') }) : null,
        img.quarantined ? el('span', { class: 'badge held', text: t('common.quarantined') }) : null,
      ),
      remarkForm,
      el(
        'div',
        { class: 'buttons' },
        el('button', {
          type: 'button',
          text: t('images.copy'),
          'aria-label': t('images.copy') + ' ' + name,
          onclick: function () {
            S.copy(img.public_url)
          },
        }),
        el('label', { for: id + '-replace', class: 'button-like', text: t('images.replace') }),
        replace,
        el('button', {
          type: 'button',
          class: 'danger',
          text: t('common.delete'),
          'aria-label': t('common.delete') + ' ' + name,
          disabled: !!img.locked,
          onclick: function () {
            if (!window.confirm(t('images.delete_confirm'))) return
            S.api
              .del('/api/image-host/images/' + S.enc(img.public_token))
              .then(function () {
                S.toast(t('common.deleted'))
                status()
              })
              .catch(S.fail('img-status'))
          },
        }),
      ),
    )
  }

  function uploadAll(files) {
    if (!files.length) return
    var fd = new FormData()
    Array.prototype.forEach.call(files, function (f) {
      fd.append('file', f, f.name)
    })
    bar.show(files.length === 1 ? files[0].name : files.length + ' × ' + t('nav.images'))
    S.status('img-status', '')
    return S.send('POST', '/api/image-host/upload', fd, bar.set, bar.signal)
      .then(function () {
        // the bar's label says "Uploaded."; the status line, cleared when the upload began, stays empty
        bar.done()
        S.$('img-input').value = ''
        // the new images are the newest: shown first
        state.page = 1
        return status()
      })
      .catch(function (e) {
        bar.hide()
        S.fail('img-status')(e)
      })
  }
  S.onSubmit(S.$('img-form'), function () {
    return uploadAll(S.$('img-input').files)
  })
  S.dropZone(S.$('img-drop'), uploadAll)
  status()
})()
