import { defineMessages, type KeyOf } from '../../web/messages.js'

/** Texts of the public report page, in English and Chinese. */
export const ABUSE_MESSAGES = defineMessages(
  {
    'report.title': 'Report content',
    'report.intro':
      'Tell us about a page, image or data link on this service that is phishing, malware, spam, a copyright infringement or otherwise abusive. No account needed.',
    'report.url': 'Address (URL) of the content',
    'report.category': 'What is wrong',
    'report.category.phishing': 'Phishing (asks for passwords, card or wallet details)',
    'report.category.malware': 'Malware',
    'report.category.spam': 'Spam',
    'report.category.copyright': 'Copyright infringement',
    'report.category.other': 'Something else',
    'report.details': 'Details (optional)',
    'report.contact': 'Your e-mail, if we may contact you (optional)',
    'report.submit': 'Send report',
    'report.sent': 'Thank you: your report was received and will be reviewed.',
    'report.error.invalid': 'The report could not be sent: check the address and the category.',
    'report.error.throttled': 'Too many reports from your network. Try again later.',
    'report.error.expired': 'The form expired. Please try again.',
    'report.contact_text': 'You can also write to {contact}.',
  },
  {
    'report.title': '举报内容',
    'report.intro': '如果本服务上的页面、图片或数据链接涉及钓鱼、恶意软件、垃圾信息、侵犯版权或其他滥用，请告诉我们。无需账户。',
    'report.url': '内容的地址（网址）',
    'report.category': '问题类型',
    'report.category.phishing': '钓鱼（索要密码、银行卡或钱包信息）',
    'report.category.malware': '恶意软件',
    'report.category.spam': '垃圾信息',
    'report.category.copyright': '侵犯版权',
    'report.category.other': '其他',
    'report.details': '说明（可选）',
    'report.contact': '你的邮箱，方便我们联系你（可选）',
    'report.submit': '提交举报',
    'report.sent': '谢谢：举报已收到，我们会尽快审核。',
    'report.error.invalid': '举报未能提交：请检查网址和问题类型。',
    'report.error.throttled': '你的网络提交的举报过多，请稍后再试。',
    'report.error.expired': '表单已过期，请重试。',
    'report.contact_text': '你也可以写信至 {contact}。',
  },
)
export type AbuseKey = KeyOf<typeof ABUSE_MESSAGES>
