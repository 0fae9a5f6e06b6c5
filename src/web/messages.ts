import type { Lang } from '../errors/render.js'

export type { Lang }

/**
 * Message tables of the service's pages, in English and Chinese. Each feature defines its own
 * with defineMessages (its nav label, dashboard card text and page texts); the pages shell
 * merges them once at start-up, so every key has exactly one owner. The texts several
 * features' pages use are the shared table below.
 */
export interface MessageTables<K extends string = string> {
  en: Readonly<Record<K, string>>
  zh: Readonly<Record<K, string>>
}

/** The keys of a table defined with defineMessages. */
export type KeyOf<M> = M extends MessageTables<infer K> ? K : never

/** A translator: fills a key's text in one language. */
export type Translator<K extends string = string> = (key: K, params?: Record<string, string | number>) => string

/** Both languages of a table; the Chinese one must have exactly the English keys. */
export function defineMessages<const E extends Record<string, string>>(en: E, zh: Record<keyof E, string>): MessageTables<keyof E & string> {
  return { en, zh }
}

/** Fills {placeholders} of a message. */
export function fill(text: string, params: Record<string, string | number> = {}): string {
  return text.replace(/\{(\w+)\}/g, (m, name: string) => (name in params ? String(params[name]) : m))
}

/** Texts shared by every feature's page and by common.js (buttons, status lines, redeem codes). */
export const SHARED_MESSAGES = defineMessages(
  {
    'redeem.title': 'Redeem a code',
    'redeem.code': 'Code',
    'redeem.submit': 'Redeem',
    'redeem.done': 'Activated.',
    'redeem.other': "This code activated {feature}, not this page's feature.",
    'feature.image-host': 'image hosting',
    'feature.hosted-data': 'hosted data',
    // an abuse report's category, in the console, its filters and the owner's dashboard
    'abuse.category.phishing': 'phishing',
    'abuse.category.malware': 'malware',
    'abuse.category.spam': 'spam',
    'abuse.category.copyright': 'copyright infringement',
    'abuse.category.other': 'other',

    'common.delete': 'Delete',
    'common.open': 'Open',
    'common.copy': 'Copy',
    'common.sandboxed': '(sandboxed: no storage, cookies or service workers; set CONTENT_DOMAIN for full sites)',
    'common.quarantined': 'held for review: visitors get 451 until an admin acts',
    'common.copied': 'Copied.',
    'common.copy_failed': 'Could not copy; select the text and copy it.',
    'common.saved': 'Saved.',
    'common.deleted': 'Deleted.',
    'common.loading': 'Loading…',
    'common.error': 'Something went wrong.',
    'common.unavailable': 'not available',
    'common.yes': 'yes',
    'common.no': 'no',
    'common.prev': 'Previous',
    'common.next': 'Next',
    'common.page': 'Page {page} of {pages}',
    'common.uploading': 'Uploading {name}…',
    'common.uploaded': 'Uploaded.',
    'common.progress': 'Upload progress',
    'common.cancel_upload': 'Cancel upload',
    'common.upload_cancelled': 'Upload cancelled.',
    'common.warnings': 'Uploaded all the same, but {n} problem(s) to fix:',
    'common.actions': 'Actions',
    'common.table_scrolls': 'Table, scrolls sideways',
    'common.close': 'Close',
    'common.cancel': 'Cancel',
    'common.refresh': 'Refresh',
    'common.session_ended': 'Your session ended. Log in again.',
    'common.not_found': 'Page not found',
  },
  {
    'redeem.title': '使用兑换码',
    'redeem.code': '兑换码',
    'redeem.submit': '兑换',
    'redeem.done': '已开通。',
    'redeem.other': '此兑换码开通的是{feature}，不是本页的功能。',
    'feature.image-host': '图片托管',
    'feature.hosted-data': '数据托管',
    'abuse.category.phishing': '钓鱼',
    'abuse.category.malware': '恶意软件',
    'abuse.category.spam': '垃圾信息',
    'abuse.category.copyright': '侵犯版权',
    'abuse.category.other': '其他',

    'common.delete': '删除',
    'common.open': '打开',
    'common.copy': '复制',
    'common.sandboxed': '（沙箱中运行：无法使用存储、Cookie 和 Service Worker；设置 CONTENT_DOMAIN 可获得完整站点）',
    'common.quarantined': '审核中：管理员处理前访问者将看到 451',
    'common.copied': '已复制。',
    'common.copy_failed': '无法复制，请手动选择文字复制。',
    'common.saved': '已保存。',
    'common.deleted': '已删除。',
    'common.loading': '加载中…',
    'common.error': '出错了。',
    'common.unavailable': '暂不可用',
    'common.yes': '是',
    'common.no': '否',
    'common.prev': '上一页',
    'common.next': '下一页',
    'common.page': '第 {page} / {pages} 页',
    'common.uploading': '正在上传 {name}…',
    'common.uploaded': '上传完成。',
    'common.progress': '上传进度',
    'common.cancel_upload': '取消上传',
    'common.upload_cancelled': '上传已取消。',
    'common.warnings': '已照常上传，但有 {n} 个问题需要修正：',
    'common.actions': '操作',
    'common.table_scrolls': '表格，可左右滚动',
    'common.close': '关闭',
    'common.cancel': '取消',
    'common.refresh': '刷新',
    'common.session_ended': '会话已结束，请重新登录。',
    'common.not_found': '页面不存在',
  },
)
export type SharedKey = KeyOf<typeof SHARED_MESSAGES>
