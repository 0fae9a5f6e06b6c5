/**
 * THE error table. Every error response of the service is rendered from one of these rows
 * (see errors/render.ts). Messages may carry {placeholders} filled from AppError params.
 *
 * Codes the spec lists keep its number, type and HTTP status. Codes the spec does not list
 * were chosen inside the spec's category ranges and are documented in the README.
 */
export interface ErrorDef {
  code: number
  type: string
  http: number
  zh: string
  en: string
  solutionZh: string
  solutionEn: string
  /** Format B string code, used on routes whose error format is 'B' (single-file upload). */
  stringCode?: string
}

const def = (
  code: number, type: string, http: number,
  zh: string, en: string, solutionZh: string, solutionEn: string, stringCode?: string,
): ErrorDef => ({ code, type, http, zh, en, solutionZh, solutionEn, stringCode })

export const ERRORS = {
  // 1000-1099 authentication
  AUTH_MISSING: def(1001, 'AUTH_ERROR', 401, '缺少 API 密钥', 'API key missing',
    '在请求头中添加 Authorization: Bearer <API_KEY>，或先登录', 'Send Authorization: Bearer <API_KEY>, or log in first'),
  AUTH_INVALID: def(1002, 'AUTH_ERROR', 401, 'API 密钥无效、已禁用或已过期', 'API key invalid, disabled or expired',
    '检查密钥是否正确、已启用且未过期', 'Check that the key is correct, enabled and not expired'),
  AUTH_AMBIGUOUS: def(1003, 'AUTH_ERROR', 400, '请求携带了多个 session Cookie', 'The request carries more than one session cookie',
    '清除本站的 Cookie 后重新登录', 'Clear this site\'s cookies and log in again'),
  LOGIN_FAILED: def(1004, 'AUTH_ERROR', 401, '用户名或密码错误', 'Wrong username or password',
    '检查用户名和密码', 'Check the username and password'),
  LOGIN_THROTTLED: def(1005, 'AUTH_ERROR', 429, '登录失败次数过多，请稍后再试', 'Too many failed logins; try again later',
    '等待 {retry_after} 秒后再试', 'Wait {retry_after} seconds and try again'),
  ACCOUNT_DISABLED: def(1006, 'AUTH_ERROR', 403, '账户已被禁用', 'Account disabled',
    '联系管理员', 'Contact the administrator'),
  API_ACCESS_DISABLED: def(1007, 'AUTH_ERROR', 403, 'API 调用权限已被禁用', 'API call permission disabled',
    '联系管理员开启 API 权限', 'Ask the administrator to enable API access', 'API_PERMISSION_DENIED'),
  CROSS_ORIGIN: def(1008, 'AUTH_ERROR', 403, '拒绝跨站请求', 'Cross-site request refused',
    '请从本站页面发起请求，或使用 API 密钥', 'Send the request from this site\'s pages, or use an API key'),
  SESSION_REQUIRED: def(1009, 'AUTH_ERROR', 403, '此接口仅支持登录会话，不支持 API 密钥', 'This endpoint needs a login session; API keys are not accepted',
    '在浏览器中登录后使用', 'Log in with a browser and use it from there'),
  ENTITLEMENT_REQUIRED: def(1010, 'AUTH_ERROR', 403, '未开通此功能', 'This feature is not enabled for the account',
    '使用兑换码开通，或联系管理员', 'Redeem a code, or ask the administrator'),
  ADMIN_REQUIRED: def(1011, 'AUTH_ERROR', 403, '需要管理员权限', 'Administrator permission required',
    '使用管理员账户', 'Use an administrator account'),
  CSRF_TOKEN: def(1012, 'AUTH_ERROR', 403, 'CSRF 校验失败', 'CSRF check failed',
    '刷新页面后重试', 'Reload the page and try again'),
  REGISTRATION_CLOSED: def(1013, 'AUTH_ERROR', 403, '注册已关闭', 'Registration is closed',
    '联系管理员创建账户', 'Ask the administrator for an account'),

  // 1100-1199 parameters
  NO_FILE: def(1101, 'PARAM_ERROR', 400, '未上传文件', 'No file was sent',
    '以 multipart/form-data 的 file 字段上传文件', 'Send the file in the multipart field "file"', 'NO_FILE'),
  EMPTY_FILE: def(1103, 'PARAM_ERROR', 400, '文件内容为空', 'The file is empty',
    '上传非空文件', 'Upload a non-empty file', 'EMPTY_FILE'),
  FILE_TOO_LARGE: def(1104, 'PARAM_ERROR', 400, '文件过大，最大 {limit} 字节', 'File too large; the maximum is {limit} bytes',
    '缩小文件后重试', 'Make the file smaller and try again'),
  FILE_TYPE_UNSUPPORTED: def(1105, 'PARAM_ERROR', 400, '不支持的文件类型：{detected}', 'Unsupported file type: {detected}',
    '只允许 {allowed}', 'Only {allowed} are allowed', 'VALIDATION_FAILED'),
  INVALID_PARAMETER: def(1106, 'PARAM_ERROR', 400, '参数错误：{detail}', 'Invalid parameter: {detail}',
    '按文档修正请求参数', 'Fix the request parameters as documented'),
  INVALID_PAGE: def(1107, 'PARAM_ERROR', 400, 'page 必须是大于等于 1 的整数', 'page must be an integer >= 1',
    '使用 page=1 或更大的整数', 'Use page=1 or a larger integer'),
  INVALID_PER_PAGE: def(1108, 'PARAM_ERROR', 400, 'per_page 必须是 {min} 到 {max} 之间的整数', 'per_page must be an integer from {min} to {max}',
    '使用 {min} 到 {max} 之间的 per_page', 'Use a per_page from {min} to {max}'),
  BODY_TOO_LARGE: def(1109, 'PARAM_ERROR', 413, '请求体过大，最大 {limit} 字节', 'Request body too large; the maximum is {limit} bytes',
    '减小请求体', 'Send a smaller body'),
  INVALID_PATH: def(1110, 'PARAM_ERROR', 400, '路径无效：{detail}', 'Invalid path: {detail}',
    '使用不含 ..、反斜杠或控制字符的相对路径', 'Use a relative path without "..", backslashes or control characters'),
  TOO_MANY_PARTS: def(1111, 'PARAM_ERROR', 413, '单次请求的文件或字段过多：{detail}', 'Too many files or fields in one request: {detail}',
    '分批上传', 'Upload in several smaller batches'),
  UNSUPPORTED_MEDIA_TYPE: def(1112, 'PARAM_ERROR', 415, '不支持的请求内容类型', 'Unsupported request Content-Type',
    '使用 {expected}', 'Use {expected}'),
  INVALID_JSON: def(1113, 'PARAM_ERROR', 400, '请求体不是有效的 JSON', 'The request body is not valid JSON',
    '发送有效的 JSON', 'Send valid JSON'),
  HTTPS_REQUIRED: def(1116, 'PARAM_ERROR', 400, '必须使用 HTTPS (ERR_PARAM_HTTPS_REQUIRED)', 'HTTPS is required (ERR_PARAM_HTTPS_REQUIRED)',
    '将请求地址改为 https://', 'Use an https:// URL', 'ERR_PARAM_HTTPS_REQUIRED'),

  // 1200-1299 quota limits
  FILE_COUNT_LIMIT: def(1201, 'QUOTA_ERROR', 400, '文件数量已达上限（{limit} 个）', 'File count limit reached ({limit} files)',
    '删除旧文件或联系管理员提高上限', 'Delete old files or ask the administrator for a higher limit'),
  RATE_LIMIT_HOUR: def(1203, 'QUOTA_ERROR', 429, '请求过于频繁（每小时限制 {limit} 次）', 'Rate limit exceeded (hourly limit {limit})',
    '{retry_after} 秒后重试', 'Retry after {retry_after} seconds'),
  RATE_LIMIT_MINUTE: def(1204, 'QUOTA_ERROR', 429, '请求过于频繁（每分钟限制 {limit} 次）', 'Rate limit exceeded (per-minute limit {limit})',
    '{retry_after} 秒后重试', 'Retry after {retry_after} seconds'),
  RATE_LIMIT_DAY: def(1205, 'QUOTA_ERROR', 429, '请求过于频繁（每日限制 {limit} 次）', 'Rate limit exceeded (daily limit {limit})',
    '北京时间 00:00 重置，{retry_after} 秒后重试', 'Resets at 00:00 Beijing time; retry after {retry_after} seconds'),
  RATE_LIMIT_CONCURRENT: def(1206, 'QUOTA_ERROR', 429, '并发请求过多（最多 {limit} 个）', 'Too many concurrent requests (at most {limit})',
    '等待进行中的请求完成', 'Wait for requests in progress to finish'),
  API_KEY_LIMIT: def(1207, 'QUOTA_ERROR', 400, 'API 密钥数量已达上限（{limit} 个）', 'API key limit reached ({limit} keys)',
    '删除不用的密钥后再创建', 'Delete a key you no longer use first'),
  QUOTA_EXCEEDED: def(1208, 'QUOTA_ERROR', 400, '配额已满：{detail}', 'Quota exceeded: {detail}',
    '删除旧数据或联系管理员提高上限', 'Delete old data or ask the administrator for a higher limit'),

  // 1300-1399 file operations
  FILE_NOT_FOUND: def(1301, 'FILE_ERROR', 404, '文件不存在', 'File not found',
    '检查文件名或路径', 'Check the file name or path'),
  FOLDER_PERMISSION: def(1312, 'FILE_ERROR', 403, '文件夹项目未激活或无权访问', 'Folder project not activated or no access',
    '先批量上传创建项目，并确认项目属于当前用户', 'Create the project with a batch upload first, and check it is yours'),
  FILE_DUPLICATE: def(1312, 'FILE_ERROR', 400, '文件已存在：{file}', 'File already exists: {file}',
    '设置 overwrite_files=true 以覆盖', 'Send overwrite_files=true to overwrite'),
  PUBLISH_NO_INDEX: def(1313, 'FILE_ERROR', 400, '项目根目录缺少 index.html，无法发布', 'The project has no root index.html and cannot be published',
    '上传根目录的 index.html 后再发布', 'Upload a root-level index.html, then publish'),

  // 1400-1499 business logic
  NOT_FOUND: def(1404, 'NOT_FOUND', 404, '接口不存在', 'No such endpoint',
    '检查请求路径和方法', 'Check the request path and method'),
  RESOURCE_NOT_FOUND: def(1405, 'NOT_FOUND', 404, '资源不存在', 'Not found',
    '检查资源标识', 'Check the identifier'),
  VERSION_CONFLICT: def(1409, 'BUSINESS_ERROR', 409, '数据已被修改，当前版本为 {current}', 'The entry was changed meanwhile; its current version is {current}',
    '重新读取后再写入', 'Read it again and retry the write'),
  LOCKED: def(1423, 'BUSINESS_ERROR', 423, '已锁定，不能删除', 'Locked; it cannot be deleted',
    '联系管理员解锁', 'Ask the administrator to unlock it'),

  // 1500-1599 server
  INTERNAL: def(1501, 'SERVER_ERROR', 500, '服务器内部错误', 'Internal server error',
    '稍后重试；如持续出现请联系管理员并提供请求 ID {request_id}', 'Retry later; if it persists, report request id {request_id}'),
  STORAGE_UNAVAILABLE: def(1503, 'SERVER_ERROR', 503, '存储暂不可用', 'Storage unavailable',
    '稍后重试', 'Retry later'),
  DEPENDENCY_UNAVAILABLE: def(1504, 'SERVER_ERROR', 503, '依赖服务暂不可用', 'A backing service is unavailable',
    '稍后重试', 'Retry later'),

  // 1600-1699 key-value store and forms
  KV_KEY_TOO_LONG: def(1601, 'DATA_ERROR', 400, '键名超过 100 个字符', 'Key longer than 100 characters',
    '使用不超过 100 个字符的键名', 'Use a key of at most 100 characters'),
  KV_ENTRY_TOO_LARGE: def(1602, 'DATA_ERROR', 400, '数据超过账户的单条大小限制（{limit} 字节）', 'Entry exceeds the account\'s size limit ({limit} bytes)',
    '减小数据，单条最大 {limit} 字节', 'Store less; the limit is {limit} bytes per entry'),
  KV_KEY_EXISTS: def(1603, 'DATA_ERROR', 400, '键名已存在', 'Key already exists for the account',
    '换一个键名', 'Choose another key'),
  KV_KEY_NOT_FOUND: def(1604, 'DATA_ERROR', 404, '键不存在', 'Key does not exist',
    '公开读取时用户名和键名须匹配且数据须公开', 'For public reads the username and key must match and the entry must be public'),
  KV_KEY_QUOTA: def(1605, 'DATA_ERROR', 400, '键数量已达上限（当前 {current}，上限 {limit}）', 'Key count quota reached (current {current}, limit {limit})',
    '删除不用的键，上限 {limit}', 'Delete unused keys; the limit is {limit}'),
  KV_KEY_FORMAT: def(1606, 'DATA_ERROR', 400, '键名格式无效：须以字母开头，只含 a-zA-Z0-9_-', 'Invalid key format: start with a letter, use only a-zA-Z0-9_-',
    '修改键名', 'Change the key'),
  // beyond the spec (1615-1619 are reserved): the form's allowed_origins refuse the page
  FORM_ORIGIN_REFUSED: def(1620, 'FORM_ERROR', 403, '此来源不允许向该表单提交', 'This origin may not submit to this form',
    '表单所有者可将页面的来源加入 allowed_origins（沙箱页面为 "null"）', 'The form owner can add the page\'s origin to allowed_origins ("null" for sandboxed pages)'),
  FORM_SLUG_TAKEN: def(1610, 'FORM_ERROR', 400, '表单标识已被占用', 'Form slug already taken',
    '换一个 form_slug 或省略以自动生成', 'Choose another form_slug, or omit it to get one generated'),
  FORM_NOT_FOUND: def(1611, 'FORM_ERROR', 404, '表单不存在', 'Form does not exist',
    '检查表单标识', 'Check the form slug or id'),
  FORM_DISABLED: def(1612, 'FORM_ERROR', 403, '表单已停用', 'Form disabled',
    '联系表单所有者', 'Contact the form owner'),
  FORM_QUOTA: def(1613, 'FORM_ERROR', 429, '表单配额已满：{detail}', 'Form quota full: {detail}',
    '上限为 {limit}', 'The limit is {limit}'),
  FORM_FIELDS_MISMATCH: def(1614, 'FORM_ERROR', 400, '提交的字段与表单定义不符：{detail}', 'Submitted fields do not match the form definition: {detail}',
    '检查字段 {field}', 'Check the field {field}'),
} as const satisfies Record<string, ErrorDef>

export type ErrorKey = keyof typeof ERRORS

/** Category ranges from the spec, used by the table's self-check test. */
export const CODE_RANGES: Record<string, [number, number][]> = {
  AUTH_ERROR: [[1000, 1099]],
  PARAM_ERROR: [[1100, 1199]],
  QUOTA_ERROR: [[1200, 1299]],
  FILE_ERROR: [[1300, 1399]],
  NOT_FOUND: [[1400, 1499]],
  BUSINESS_ERROR: [[1400, 1499]],
  SERVER_ERROR: [[1500, 1599]],
  DATA_ERROR: [[1600, 1699]],
  FORM_ERROR: [[1600, 1699]],
}
