/** A report's category, as a reporter chooses it (the form, the API and the console's filter). */
export const CATEGORIES = ['phishing', 'malware', 'spam', 'copyright', 'other'] as const
export type Category = (typeof CATEGORIES)[number]
/** A report's status, from `open` on; the admin actions move it (service.ts). */
export const REPORT_STATUSES = ['open', 'quarantined', 'restored', 'taken_down', 'lifted', 'dismissed'] as const
export type ReportStatus = (typeof REPORT_STATUSES)[number]
