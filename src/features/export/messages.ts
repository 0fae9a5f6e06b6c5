import { defineMessages, type KeyOf } from '../../web/messages.js'

/** Texts of the export page, in English and Chinese. */
export const EXPORT_MESSAGES = defineMessages(
  {
    'nav.export': 'Export',
    'dash.export.text': 'Download all your data, to keep or to move to another instance.',
    'export.title': 'Export your data',
    'export.text':
      'One .zip file with your single pages, folder projects, database entries (JSON), forms and submissions (CSV and JSON), images and hosted data with every version. An administrator can load it into another instance.',
    'export.download_tar': 'The same as .tar.gz',
    'export.download': 'Download my data',
  },
  {
    'nav.export': '导出',
    'dash.export.text': '下载你的全部数据，用于保存或迁移到其他实例。',
    'export.title': '导出数据',
    'export.text':
      '一个 .zip 文件，包含你的单文件、文件夹项目、数据库条目（JSON）、表单及提交（CSV 和 JSON）、图片以及数据托管的所有版本。管理员可将其导入其他实例。',
    'export.download_tar': '同样内容的 .tar.gz 文件',
    'export.download': '下载我的数据',
  },
)
export type ExportKey = KeyOf<typeof EXPORT_MESSAGES>
