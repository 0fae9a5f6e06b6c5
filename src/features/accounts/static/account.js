// /account: change the password (the current one, the new one twice); the server ends the
// account's other sessions and keeps this one. Delete the account: its name typed again, the
// password, and a last confirm; the server ends the session, and the page leaves for /login.
;(function () {
  'use strict'
  var S = window.SVC
  var t = S.t
  var form = S.$('pw-form')
  var current = S.$('pw-current')
  var next = S.$('pw-new')
  var again = S.$('pw-again')

  S.onSubmit(form, function () {
    S.status('pw-status', '')
    if (next.value !== again.value) {
      S.fieldError(again, t('account.pw.mismatch'))
      return null
    }
    return S.api
      .post('/svc_api/account/password', { current_password: current.value, new_password: next.value })
      .then(function () {
        form.reset()
        S.status('pw-status', t('account.pw.done'), 'ok')
      })
      .catch(function (err) {
        // a refused field is marked at the field; anything else goes to the status line
        var field = err.body && err.body.field
        if (field === 'current_password') S.fieldError(current, t('account.pw.wrong'))
        else if (field === 'new_password') S.fieldError(next, err.body.message)
        else S.fail('pw-status')(err)
      })
  })

  var delForm = S.$('del-form')
  var delName = S.$('del-username')
  var delPassword = S.$('del-password')
  var me = (S.data && S.data.username) || ''

  S.onSubmit(delForm, function () {
    S.status('del-status', '')
    var name = delName.value.trim().toLowerCase()
    if (me && name !== me) {
      S.fieldError(delName, t('account.del.mismatch'))
      return null
    }
    if (!window.confirm(t('account.del.confirm', { name: name }))) return null
    return S.api
      .post('/svc_api/account/delete', { username: name, password: delPassword.value })
      .then(function () {
        window.location.assign('/login')
      })
      .catch(function (err) {
        var field = err.body && err.body.field
        if (field === 'password') S.fieldError(delPassword, t('account.pw.wrong'))
        else if (field === 'username') S.fieldError(delName, err.body.message)
        else S.fail('del-status')(err)
      })
  })
})()
