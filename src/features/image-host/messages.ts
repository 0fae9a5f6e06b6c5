import { defineMessages, type KeyOf } from '../../web/messages.js'

/** Texts of the images page, in English and Chinese (the scripts get them too, as JSON). */
export const IMAGE_HOST_MESSAGES = defineMessages(
  {
    'nav.images': 'Images',

    'dash.images.text': 'Images with permanent links (needs activation).',

    'images.title': 'Images',
    'images.status': 'Status',
    'images.entitled': 'Image hosting is active.',
    'images.not_entitled': 'Image hosting is not active for your account. Redeem a code to activate it.',
    'images.quota': '{count} of {max} images · {used} of {total} · at most {each} per image',
    'images.upload': 'Upload images',
    'images.choose': 'Images to upload',
    'images.submit': 'Upload',
    'images.remark': 'Remark',
    'images.save_remark': 'Save remark',
    'images.replace': 'Replace file',
    'images.copy': 'Copy link',
    'images.locked': 'locked',
    'images.none': 'No images yet.',
    'images.delete_confirm': 'Delete this image? Its link stops working.',
  },
  {
    'nav.images': '图床',

    'dash.images.text': '永久链接的图片托管（需开通）。',

    'images.title': '图床',
    'images.status': '状态',
    'images.entitled': '图床已开通。',
    'images.not_entitled': '你的账户尚未开通图床，请使用兑换码开通。',
    'images.quota': '图片 {count} / {max} 张 · 已用 {used} / {total} · 单张最大 {each}',
    'images.upload': '上传图片',
    'images.choose': '要上传的图片',
    'images.submit': '上传',
    'images.remark': '备注',
    'images.save_remark': '保存备注',
    'images.replace': '替换文件',
    'images.copy': '复制链接',
    'images.locked': '已锁定',
    'images.none': '还没有图片。',
    'images.delete_confirm': '删除这张图片？它的链接将失效。',
  },
)
export type ImageHostKey = KeyOf<typeof IMAGE_HOST_MESSAGES>
