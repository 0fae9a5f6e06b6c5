import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CODE_RANGES, ERRORS } from '../../src/errors/codes.js'
import { pickLang, renderError } from '../../src/errors/render.js'
import { fromFastifyError } from '../../src/http/errors.js'
import { Ajv } from 'ajv'
import { Ajv2019 } from 'ajv/dist/2019.js'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { errorCodes, type FastifyError } from 'fastify'
import { beijingTime, isoMicros, nextBeijingMidnight } from '../../src/util/time.js'

describe('the error table', () => {
  it('gives every row a status, a code in its category range and messages in both languages', () => {
    const seen = new Map<number, string>()
    for (const [key, d] of Object.entries(ERRORS)) {
      const ranges = CODE_RANGES[d.type]
      assert.ok(ranges, `${key}: unknown type ${d.type}`)
      assert.ok(
        ranges.some(([lo, hi]) => d.code >= lo && d.code <= hi),
        `${key}: ${d.code} outside ${d.type}`,
      )
      assert.ok(d.http >= 400 && d.http < 600, key)
      assert.ok(d.zh && d.en && d.solutionZh && d.solutionEn, key)
      // codes are unique except 1312, which the spec gives to two meanings, 1001, whose
      // message says what is missing (an API key, or a sign-in on a session-only endpoint),
      // 1002, whose message names what is invalid (an API key, or a session), and 1404, no
      // such endpoint: no such path (404), or a method the path does not take (405)
      if (seen.has(d.code) && ![1312, 1001, 1002, 1404].includes(d.code)) assert.fail(`${key} repeats code ${d.code} of ${seen.get(d.code)}`)
      seen.set(d.code, key)
    }
  })

  it('keeps the spec listed codes with their types and statuses', () => {
    const spec: Array<[keyof typeof ERRORS, number, string, number]> = [
      ['AUTH_MISSING', 1001, 'AUTH_ERROR', 401],
      ['SIGN_IN_REQUIRED', 1001, 'AUTH_ERROR', 401],
      ['AUTH_INVALID', 1002, 'AUTH_ERROR', 401],
      ['SESSION_ENDED', 1002, 'AUTH_ERROR', 401],
      ['ACCOUNT_DISABLED', 1006, 'AUTH_ERROR', 403],
      ['API_ACCESS_DISABLED', 1007, 'AUTH_ERROR', 403],
      ['NO_FILE', 1101, 'PARAM_ERROR', 400],
      ['EMPTY_FILE', 1103, 'PARAM_ERROR', 400],
      ['FILE_TOO_LARGE', 1104, 'PARAM_ERROR', 400],
      ['FILE_TYPE_UNSUPPORTED', 1105, 'PARAM_ERROR', 400],
      ['HTTPS_REQUIRED', 1116, 'PARAM_ERROR', 400],
      ['FILE_COUNT_LIMIT', 1201, 'QUOTA_ERROR', 400],
      ['RATE_LIMIT_HOUR', 1203, 'QUOTA_ERROR', 429],
      ['RATE_LIMIT_MINUTE', 1204, 'QUOTA_ERROR', 429],
      ['FOLDER_PERMISSION', 1312, 'FILE_ERROR', 403],
      ['INTERNAL', 1501, 'SERVER_ERROR', 500],
      ['STORAGE_UNAVAILABLE', 1503, 'SERVER_ERROR', 503],
      ['KV_KEY_TOO_LONG', 1601, 'DATA_ERROR', 400],
      ['KV_ENTRY_TOO_LARGE', 1602, 'DATA_ERROR', 400],
      ['KV_KEY_EXISTS', 1603, 'DATA_ERROR', 400],
      ['KV_KEY_NOT_FOUND', 1604, 'DATA_ERROR', 404],
      ['KV_KEY_QUOTA', 1605, 'DATA_ERROR', 400],
      ['KV_KEY_FORMAT', 1606, 'DATA_ERROR', 400],
      ['FORM_SLUG_TAKEN', 1610, 'FORM_ERROR', 400],
      ['FORM_NOT_FOUND', 1611, 'FORM_ERROR', 404],
      ['FORM_DISABLED', 1612, 'FORM_ERROR', 403],
      ['FORM_QUOTA', 1613, 'FORM_ERROR', 429],
      ['FORM_FIELDS_MISMATCH', 1614, 'FORM_ERROR', 400],
    ]
    for (const [key, code, type, http] of spec) assert.deepEqual([ERRORS[key].code, ERRORS[key].type, ERRORS[key].http], [code, type, http], key)
    const reserved = [1600, 1607, 1608, 1609, 1615, 1616, 1617, 1618, 1619]
    for (const d of Object.values(ERRORS)) assert.ok(!reserved.includes(d.code), `reserved code ${d.code} used`)
  })

  it('sends a too-large deploy manifest (1328) to the deploy limits, not the upload limits', () => {
    const d = ERRORS.MANIFEST_TOO_LARGE
    for (const text of [d.solutionEn, d.solutionZh]) assert.match(text, /GET \/api\/folders\/deploy_limits\b/)
  })

  it('renders format A, format B (string codes only where the spec has them) and plain', () => {
    const a = renderError('AUTH_MISSING', 'A', 'en', {}, 'https://h')
    assert.deepEqual(Object.keys(a), ['success', 'error_code', 'error_type', 'message', 'solution', 'doc_link'])
    assert.equal(a.doc_link, 'https://h/docs/errors#1001')
    assert.deepEqual(renderError('NO_FILE', 'B', 'zh', {}, 'https://h'), { success: false, message: '未上传文件', error_code: 'NO_FILE' })
    assert.equal(renderError('API_ACCESS_DISABLED', 'B', 'en', {}, '').error_code, 'API_PERMISSION_DENIED')
    assert.equal(renderError('FILE_COUNT_LIMIT', 'B', 'en', { params: { limit: 100 } }, '').error_code, 1201)
    assert.deepEqual(renderError('LOCKED', 'plain', 'en', {}, ''), { success: false, message: 'Locked; it cannot be deleted' })
  })

  it('picks the language from Accept-Language', () => {
    assert.equal(pickLang(undefined), 'zh')
    assert.equal(pickLang('en'), 'en')
    assert.equal(pickLang('fr, en;q=0.5'), 'en')
    assert.equal(pickLang('en;q=0.4, zh-CN;q=0.8'), 'zh')
    assert.equal(pickLang('de'), 'zh')
  })
})

describe('schema failures the table words in both languages', () => {
  // the validator's own errors for a body, as Fastify hands them to the error handler
  const ajv = new Ajv({ allErrors: false, strict: false })
  ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T/)
  // the dialect that has dependentRequired (the service's validator has `dependencies`)
  const ajv2019 = new Ajv2019({ allErrors: false, strict: false })
  const refusal = (schema: object, body: unknown, validator: Ajv = ajv) => {
    const validate = validator.compile({ type: 'object', properties: { a: schema } })
    assert.equal(validate({ a: body }), false)
    const e = Object.assign(new Error('validation'), { code: 'FST_ERR_VALIDATION', validation: validate.errors, validationContext: 'body' })
    const err = fromFastifyError(e as unknown as FastifyError, 1, 1)
    assert.ok(err)
    return [renderError(err.key, 'A', 'zh', err.options, '').message, renderError(err.key, 'A', 'en', err.options, '').message]
  }
  const cases: Array<[string, object, unknown, string, string]> = [
    ['not', { not: { type: 'string' } }, 'x', 'a 不能是被排除的形式', 'a must not be of the excluded form'],
    ['minProperties', { type: 'object', minProperties: 2 }, { x: 1 }, 'a 至少 2 个字段', 'a must have at least 2 properties'],
    ['maxProperties', { type: 'object', maxProperties: 1 }, { x: 1, y: 2 }, 'a 最多 1 个字段', 'a must have at most 1 property'],
    [
      'propertyNames',
      { type: 'object', propertyNames: { pattern: '^[a-z]+$' } },
      { X1: 1 },
      'a 中的字段名 X1 无效：格式不符，须匹配 ^[a-z]+$',
      'a has an invalid property name X1: must match the pattern ^[a-z]+$',
    ],
    [
      'propertyNames (a length)',
      { type: 'object', propertyNames: { maxLength: 3 } },
      { abcd: 1 },
      'a 中的字段名 abcd 无效：最多 3 个字符',
      'a has an invalid property name abcd: must be at most 3 characters long',
    ],
    [
      'propertyNames (a rule outside the table)',
      { type: 'object', propertyNames: { not: { const: 'x' } } },
      { x: 1 },
      'a 中的字段名 x 无效：不能是被排除的形式',
      'a has an invalid property name x: must not be of the excluded form',
    ],
    ['dependencies', { type: 'object', dependencies: { x: ['y'] } }, { x: 1 }, '缺少字段 a.y（有 a.x 时必填）', 'a.y is required when a.x is present'],
    ['const', { const: 'yes' }, 'no', 'a 须为 yes', 'a must be yes'],
    ['const (not a string)', { const: 3 }, 4, 'a 须为 3', 'a must be 3'],
    ['format', { type: 'string', format: 'date-time' }, 'soon', 'a 须为有效的 date-time', 'a must be a valid date-time'],
    ['multipleOf', { type: 'integer', multipleOf: 5 }, 7, 'a 须为 5 的倍数', 'a must be a multiple of 5'],
    [
      'uniqueItems',
      { type: 'array', uniqueItems: true },
      [1, 2, 1],
      'a 不能有重复项：a[0] 与 a[2] 相同',
      'a must not have duplicate items: a[0] and a[2] are the same',
    ],
    [
      'anyOf',
      { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }] },
      -1,
      'a 须满足以下之一：不能小于 0；须为 null 类型',
      'a must satisfy one of: must be at least 0; must be of type null',
    ],
    [
      'oneOf, no branch',
      {
        oneOf: [
          { type: 'string', minLength: 2 },
          { type: 'array', maxItems: 1 },
        ],
      },
      'x',
      'a 须满足以下之一：至少 2 个字符；须为 array 类型',
      'a must satisfy one of: must be at least 2 characters long; must be of type array',
    ],
    [
      'oneOf, several branches',
      { oneOf: [{ type: 'integer' }, { type: 'number' }] },
      1,
      'a 须恰好符合一种允许的形式，却符合了多种',
      'a must match exactly one of its allowed forms, not several',
    ],
  ]
  for (const [keyword, schema, body, zh, en] of cases) {
    it(`${keyword}: names the field and the rule`, () => {
      assert.deepEqual(refusal(schema, body), [`参数错误：${zh}`, `Invalid parameter: ${en}`])
    })
  }
  it('dependentRequired: names the missing field and the one that asks for it', () => {
    assert.deepEqual(refusal({ type: 'object', dependentRequired: { x: ['y'] } }, { x: 1 }, ajv2019), [
      '参数错误：缺少字段 a.y（有 a.x 时必填）',
      'Invalid parameter: a.y is required when a.x is present',
    ])
  })
  // keywords of later drafts and options the service's validator does not enable, and the
  // report of a validator that collects every error (an `if` names its failing branch then)
  const ajv2020 = new Ajv2020({ allErrors: false, strict: false })
  const every = new Ajv({ allErrors: true, strict: false })
  const tagged = new Ajv({ allErrors: false, strict: false, discriminator: true })
  const conditional = { if: { properties: { x: { const: 1 } }, required: ['x'] }, then: { required: ['y'] }, else: { required: ['z'] } }
  const forms = {
    type: 'object',
    discriminator: { propertyName: 'k' },
    required: ['k'],
    oneOf: [{ properties: { k: { const: 'p' } } }, { properties: { k: { const: 'q' } } }],
  }
  const more: Array<[string, Ajv, object, unknown, string, string]> = [
    ['contains', ajv, { type: 'array', contains: { type: 'integer' } }, ['x'], 'a 至少须含 1 个符合要求的项', 'a must contain at least 1 matching item'],
    [
      'minContains',
      ajv2019,
      { type: 'array', contains: { type: 'integer' }, minContains: 2 },
      [1, 'x'],
      'a 至少须含 2 个符合要求的项',
      'a must contain at least 2 matching items',
    ],
    [
      'maxContains',
      ajv2019,
      { type: 'array', contains: { type: 'integer' }, minContains: 0, maxContains: 1 },
      [1, 2],
      'a 最多含 1 个符合要求的项',
      'a must contain at most 1 matching item',
    ],
    [
      'minContains and maxContains',
      ajv2019,
      { type: 'array', contains: { type: 'integer' }, minContains: 2, maxContains: 3 },
      [1],
      'a 须含 2 到 3 个符合要求的项',
      'a must contain between 2 and 3 matching items',
    ],
    [
      'minContains equal to maxContains',
      ajv2019,
      { type: 'array', contains: { type: 'integer' }, maxContains: 1 },
      [1, 2],
      'a 须恰好含 1 个符合要求的项',
      'a must contain exactly 1 matching item',
    ],
    ['additionalItems', ajv, { type: 'array', items: [{ type: 'integer' }], additionalItems: false }, [1, 2], 'a 最多 1 项', 'a must have at most 1 item'],
    [
      'items after prefixItems',
      ajv2020,
      { type: 'array', prefixItems: [{ type: 'integer' }], items: false },
      [1, 2, 3],
      'a 最多 1 项',
      'a must have at most 1 item',
    ],
    [
      'unevaluatedItems',
      ajv2019,
      { type: 'array', items: [{ type: 'integer' }, { type: 'integer' }], unevaluatedItems: false },
      [1, 2, 3],
      'a 最多 2 项',
      'a must have at most 2 items',
    ],
    [
      'unevaluatedProperties',
      ajv2019,
      { type: 'object', properties: { x: {} }, unevaluatedProperties: false },
      { x: 1, y: 2 },
      '不接受字段 a.y',
      'a.y is not an accepted field',
    ],
    ['dependentSchemas', ajv2019, { type: 'object', dependentSchemas: { x: { required: ['y'] } } }, { x: 1 }, '缺少必填字段 a.y', 'a.y is required'],
    ['a false schema', ajv, { type: 'object', properties: { x: false } }, { x: 1 }, '不允许出现 a.x', 'a.x is not allowed'],
    ['if/then, as the service reports it', ajv, conditional, { x: 1 }, '缺少必填字段 a.y', 'a.y is required'],
    [
      'if/then',
      every,
      conditional,
      { x: 1 },
      'a 须满足条件成立时适用的规则：缺少必填字段 a.y',
      'a must satisfy the rule that applies when its condition holds: a.y is required',
    ],
    [
      'if/else',
      every,
      conditional,
      { x: 2 },
      'a 须满足条件不成立时适用的规则：缺少必填字段 a.z',
      'a must satisfy the rule that applies when its condition does not hold: a.z is required',
    ],
    [
      'enum in a union',
      ajv,
      { anyOf: [{ enum: ['p', 'q'] }, { type: 'integer' }] },
      'r',
      'a 须满足以下之一：须为以下值之一：p、q；须为 integer 类型',
      'a must satisfy one of: must be one of: p, q; must be of type integer',
    ],
    ['discriminator (no form for the value)', tagged, forms, { k: 'r' }, 'a.k 的值 r 不对应任何允许的形式', 'a.k value r matches none of the allowed forms'],
    ['discriminator (not a string)', tagged, forms, { k: 1 }, 'a.k 须为 string 类型', 'a.k must be of type string'],
  ]
  for (const [keyword, validator, schema, body, zh, en] of more) {
    it(`${keyword}: names the field and the rule`, () => {
      assert.deepEqual(refusal(schema, body, validator), [`参数错误：${zh}`, `Invalid parameter: ${en}`])
    })
  }
  it("a keyword the table does not know: a whole Chinese sentence, the validator's English", () => {
    const custom = new Ajv({ allErrors: false, strict: false })
    custom.addKeyword({ keyword: 'x-odd', validate: () => false })
    const validate = custom.compile({ type: 'object', properties: { a: { 'x-odd': true } } })
    assert.equal(validate({ a: 1 }), false)
    const e = Object.assign(new Error('body/a must pass "x-odd" keyword validation'), {
      code: 'FST_ERR_VALIDATION',
      validation: validate.errors,
      validationContext: 'body',
    })
    const err = fromFastifyError(e as unknown as FastifyError, 1, 1)
    assert.ok(err)
    const zh = renderError(err.key, 'A', 'zh', err.options, '').message
    assert.equal(zh, '参数错误：请求参数不符合接口的要求')
    assert.doesNotMatch(String(zh), /[A-Za-z]{4,}/)
    assert.equal(renderError(err.key, 'A', 'en', err.options, '').message, 'Invalid parameter: body/a must pass "x-odd" keyword validation')
  })
  it('a value PostgreSQL cannot store (NUL, invalid encoding): a whole message in each language', () => {
    for (const code of ['22021', '22P05', '22P02']) {
      const err = fromFastifyError(Object.assign(new Error('invalid byte sequence'), { code }), 1, 1)
      assert.ok(err)
      assert.equal(renderError(err.key, 'A', 'zh', err.options, '').message, '参数错误：某个值包含无法存储的字符', code)
      assert.equal(renderError(err.key, 'A', 'en', err.options, '').message, 'Invalid parameter: a value contains characters that cannot be stored', code)
    }
  })
})

describe('details in both languages', () => {
  it("a member of details given as a Text is said in the answer's language; other members are kept as they are", () => {
    const options = { extra: { details: { info: { zh: '说明', en: 'a note' }, limit: 3, paths: ['a/b'] }, retry_after: 1 } }
    for (const lang of ['zh', 'en'] as const) {
      const body = renderError('INVALID_PARAMETER', 'A', lang, options, '')
      assert.deepEqual(body.details, { info: lang === 'zh' ? '说明' : 'a note', limit: 3, paths: ['a/b'] })
      assert.equal(body.retry_after, 1)
    }
  })
  it('a write that could not be made durable (1503): its reason in each language', () => {
    const err = fromFastifyError(Object.assign(new Error('the write could not be made durable: EIO'), { code: 'SVC_NOT_DURABLE' }), 1, 1)
    assert.ok(err)
    assert.equal(err.status, 503)
    const reason = (lang: 'zh' | 'en') => (renderError(err.key, 'A', lang, err.options, '').details as { reason: string }).reason
    assert.equal(reason('zh'), '写入未能持久保存到磁盘，可能没有保存成功')
    assert.equal(reason('en'), 'the write could not be made durable and may not have been saved')
  })
})

describe('framework refusals the table words in both languages', () => {
  /** The key, status and both messages of the answer to a framework error. */
  const answer = (e: Error) => {
    const err = fromFastifyError(e as FastifyError, 1024, 2048)
    assert.ok(err)
    return {
      key: err.key,
      status: err.status,
      zh: renderError(err.key, 'A', 'zh', err.options, '').message,
      en: renderError(err.key, 'A', 'en', err.options, '').message,
    }
  }
  const cases: Array<[string, Error, string, number, string, string, boolean]> = [
    ['invalid JSON', new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), 'INVALID_JSON', 400, '请求体不是有效的 JSON', 'The request body is not valid JSON', false],
    [
      'an empty JSON body',
      new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(),
      'INVALID_JSON',
      400,
      '请求体不是有效的 JSON',
      'The request body is not valid JSON',
      false,
    ],
    [
      'a body over the limit',
      new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(),
      'BODY_TOO_LARGE',
      413,
      '请求体过大，最大 1 KiB（1024 字节）',
      'Request body too large; the maximum is 1 KiB (1024 bytes)',
      true,
    ],
    [
      'an unsupported media type',
      new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(),
      'UNSUPPORTED_MEDIA_TYPE',
      415,
      '不支持的请求内容类型',
      'Unsupported request Content-Type',
      true,
    ],
    [
      'a QUERY request without Content-Type',
      new errorCodes.FST_ERR_ROUTE_MISSING_CONTENT_TYPE('QUERY'),
      'INVALID_PARAMETER',
      400,
      '参数错误：缺少 Content-Type 请求头',
      'Invalid parameter: the Content-Type header is missing',
      false,
    ],
    [
      'a request without a body',
      new errorCodes.FST_ERR_ROUTE_MISSING_CONTENT('POST'),
      'INVALID_PARAMETER',
      400,
      '参数错误：缺少请求体',
      'Invalid parameter: the request body is missing',
      true,
    ],
    [
      'a path parameter over the limit',
      new errorCodes.FST_ERR_MAX_PARAM_LENGTH('/x'),
      'INVALID_PARAMETER',
      414,
      '参数错误：路径中某一段超过 2048 个字符',
      'Invalid parameter: a path segment is longer than 2048 characters',
      true,
    ],
    [
      'a body whose length is not its Content-Length',
      new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH(),
      'INVALID_PARAMETER',
      400,
      '参数错误：请求体的长度与 Content-Length 请求头不符',
      "Invalid parameter: the request body's length does not match its Content-Length header",
      false,
    ],
    [
      'a malformed URL',
      new errorCodes.FST_ERR_BAD_URL('/%zz'),
      'INVALID_PARAMETER',
      400,
      '参数错误：URL 中的百分号编码格式错误',
      'Invalid parameter: malformed percent-encoding in the URL',
      false,
    ],
    [
      'a body cut short',
      Object.assign(new Error('aborted'), { code: 'ECONNRESET', statusCode: 400 }),
      'INVALID_PARAMETER',
      400,
      '参数错误：请求在请求体完整之前就结束了',
      'Invalid parameter: the request ended before the body was complete',
      true,
    ],
    [
      'a multipart part declared JSON that is not',
      Object.assign(new Error('a request field is not a valid JSON as declared by its Content-Type'), {
        code: 'FST_INVALID_JSON_FIELD_ERROR',
        statusCode: 406,
      }),
      'INVALID_PARAMETER',
      400,
      '参数错误：多部分表单请求体无效：声明为 JSON 的部分不是有效的 JSON',
      'Invalid parameter: malformed multipart body: a part declared as JSON is not valid JSON',
      false,
    ],
    [
      'an unknown client error',
      Object.assign(new Error('Something went sideways'), { code: 'FST_SOMETHING_NEW', statusCode: 409 }),
      'INVALID_PARAMETER',
      409,
      '参数错误：请求无法按原样处理',
      'Invalid parameter: the request cannot be processed as sent',
      true,
    ],
  ]
  for (const [name, e, key, status, zh, en, wordless] of cases) {
    it(`${name}: a whole message in each language`, () => {
      const a = answer(e)
      assert.deepEqual([a.key, a.status, a.zh, a.en], [key, status, zh, en])
      if (wordless) assert.doesNotMatch(String(a.zh), /[A-Za-z]{4,}/)
    })
  }
})

describe('time formats', () => {
  it('formats Beijing time and ISO with microseconds', () => {
    const t = Date.UTC(2026, 0, 15, 17, 4, 5, 123)
    assert.equal(beijingTime(t), '2026-01-16 01:04:05')
    assert.equal(isoMicros(t), '2026-01-16T01:04:05.123000+08:00')
    assert.equal(nextBeijingMidnight(Date.UTC(2026, 0, 15, 15, 59, 59)), Date.UTC(2026, 0, 15, 16, 0, 0))
    assert.equal(nextBeijingMidnight(Date.UTC(2026, 0, 15, 16, 0, 0)), Date.UTC(2026, 0, 16, 16, 0, 0))
  })

  it('formats each instant as its own, whatever was formatted before (isoMicros keeps the last few)', () => {
    const t = Date.UTC(2026, 0, 15, 17, 4, 5, 120)
    // t and t + 8 ms share a kept slot; t + 1 ms takes another; each is asked twice in turn
    for (let round = 0; round < 2; round++) {
      assert.equal(isoMicros(t), '2026-01-16T01:04:05.120000+08:00')
      assert.equal(isoMicros(t + 8), '2026-01-16T01:04:05.128000+08:00')
      assert.equal(isoMicros(t + 1), '2026-01-16T01:04:05.121000+08:00')
      assert.equal(isoMicros(t + 8 + 86_400_000), '2026-01-17T01:04:05.128000+08:00')
    }
    assert.equal(isoMicros(0), '1970-01-01T08:00:00.000000+08:00')
  })
})
