import { defineMessages, type KeyOf } from '../../web/messages.js'

/** Texts of the "my database" page, in English and Chinese (the scripts get them too, as JSON). */
export const KV_MESSAGES = defineMessages(
  {
    'nav.kv': 'My database',

    'dash.kv.text': 'Store small JSON values; read them publicly if you want.',

    'kv.title': 'My database',
    'kv.editor': 'Store an entry',
    'kv.key': 'Key',
    'kv.key_hint': 'Starts with a letter; a-z, A-Z, 0-9, _ and -; at most {n} characters.',
    'kv.type': 'Type',
    'kv.value': 'Value',
    'kv.tags': 'Tags (comma-separated)',
    'kv.public': 'Public: anyone can read it at its public link',
    'kv.save': 'Save',
    'kv.new': 'New entry',
    'kv.col.key': 'Key',
    'kv.col.type': 'Type',
    'kv.col.value': 'Value',
    'kv.col.public': 'Public',
    'kv.col.updated': 'Updated',
    'kv.edit': 'Edit',
    'kv.copy_url': 'Copy public link',
    'kv.none': 'No entries yet.',
    'kv.usage': '{keys} of {max} keys · at most {size} per entry',
    'kv.bad_json': 'The value is not valid JSON.',
    'kv.bad_number': 'The value is not a number.',
    'kv.delete_confirm': 'Delete the entry "{key}"?',
  },
  {
    'nav.kv': '我的数据库',

    'dash.kv.text': '存储小型 JSON 数据，可设为公开读取。',

    'kv.title': '我的数据库',
    'kv.editor': '存储数据',
    'kv.key': '键名',
    'kv.key_hint': '以字母开头；只含 a-z、A-Z、0-9、_ 和 -；最多 {n} 个字符。',
    'kv.type': '类型',
    'kv.value': '值',
    'kv.tags': '标签（逗号分隔）',
    'kv.public': '公开：任何人都能通过公开链接读取',
    'kv.save': '保存',
    'kv.new': '新建',
    'kv.col.key': '键名',
    'kv.col.type': '类型',
    'kv.col.value': '值',
    'kv.col.public': '公开',
    'kv.col.updated': '更新时间',
    'kv.edit': '编辑',
    'kv.copy_url': '复制公开链接',
    'kv.none': '还没有数据。',
    'kv.usage': '已用 {keys} / {max} 个键 · 单条最大 {size}',
    'kv.bad_json': '值不是有效的 JSON。',
    'kv.bad_number': '值不是数字。',
    'kv.delete_confirm': '删除键“{key}”？',
  },
)
export type KvKey = KeyOf<typeof KV_MESSAGES>
