import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2'

/** A start or end tag of a page: its name and attributes in lower case (the first of a name wins). */
export interface Tag {
  name: string
  attrs: Readonly<Record<string, string>>
  end: boolean
}

/**
 * Calls `fn` for each tag of `html` as a browser's tokenizer reads it (htmlparser2's Tokenizer):
 * comments, and the text of script, style, textarea and title elements, hold no tags, and
 * entities in attribute values are decoded. Tags inside a `<template>` are skipped (they make
 * nothing until a script clones them). One pass in time linear in the page's length whatever
 * its nesting (htmlparser2's Parser keeps an open-element stack that deep nesting makes
 * quadratic), so a page an upload carries cannot stall the event loop.
 */
export function eachTag(html: string, fn: (tag: Tag) => void): void {
  let name = ''
  let end = false
  let attrs: Record<string, string> = {}
  let attrName = ''
  let attrValue = ''
  let template = 0
  const emit = (tag: Tag) => {
    if (tag.name === 'template') template = Math.max(0, template + (tag.end ? -1 : 1))
    else if (template === 0) fn(tag)
  }
  const cbs: TokenizerCallbacks = {
    onopentagname(start, endIndex) {
      name = html.slice(start, endIndex).toLowerCase()
      end = false
      attrs = {}
    },
    onattribname(start, endIndex) {
      attrName = html.slice(start, endIndex).toLowerCase()
      attrValue = ''
    },
    onattribdata(start, endIndex) {
      attrValue += html.slice(start, endIndex)
    },
    onattribentity(codepoint) {
      attrValue += String.fromCodePoint(codepoint)
    },
    onattribend() {
      if (!Object.hasOwn(attrs, attrName)) attrs[attrName] = attrValue
    },
    onopentagend() {
      emit({ name, attrs, end })
    },
    onselfclosingtag() {
      emit({ name, attrs, end })
    },
    onclosetag(start, endIndex) {
      emit({ name: html.slice(start, endIndex).toLowerCase(), attrs: {}, end: true })
    },
    oncdata() {},
    oncomment() {},
    ondeclaration() {},
    onend() {},
    onprocessinginstruction() {},
    ontext() {},
    ontextentity() {},
  }
  const t = new Tokenizer({ decodeEntities: true }, cbs)
  t.write(html)
  t.end()
}

/**
 * The text a page shows, as eachTag reads it: text nodes outside scripts and styles, entities
 * decoded, a space at every tag (so words of two elements never join). Linear in the page's length.
 */
export function pageText(html: string): string {
  const parts: string[] = []
  let hidden = 0
  let name = ''
  const cbs: TokenizerCallbacks = {
    onopentagname(start, endIndex) {
      name = html.slice(start, endIndex).toLowerCase()
    },
    onopentagend() {
      if (name === 'script' || name === 'style') hidden = 1
      parts.push(' ')
    },
    onclosetag(start, endIndex) {
      const n = html.slice(start, endIndex).toLowerCase()
      if (n === 'script' || n === 'style') hidden = 0
      parts.push(' ')
    },
    ontext(start, endIndex) {
      if (hidden === 0) parts.push(html.slice(start, endIndex))
    },
    ontextentity(codepoint) {
      if (hidden === 0) parts.push(String.fromCodePoint(codepoint))
    },
    onattribname() {},
    onattribdata() {},
    onattribentity() {},
    onattribend() {},
    onselfclosingtag() {},
    oncdata() {},
    oncomment() {},
    ondeclaration() {},
    onend() {},
    onprocessinginstruction() {},
  }
  const t = new Tokenizer({ decodeEntities: true }, cbs)
  t.write(html)
  t.end()
  return parts.join('')
}
