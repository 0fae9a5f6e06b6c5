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
 * quadratic), so a page an upload carries cannot stall the event loop. `text`, when given,
 * gets the page's text in the same pass, in pieces that join into pageText's.
 */
export function eachTag(html: string, fn: (tag: Tag) => void, text?: (piece: string) => void): void {
  tokenize(html, fn, text ?? null)
}

/**
 * The text a page shows, as eachTag reads it: text nodes outside scripts and styles, entities
 * decoded, a space at every tag (so words of two elements never join). Linear in the page's length.
 */
export function pageText(html: string): string {
  const parts: string[] = []
  tokenize(html, null, (p) => parts.push(p))
  return parts.join('')
}

/**
 * The one tokenizer pass behind eachTag and pageText: the tags for `fn` (attributes read only
 * for it), the text for `text` (hidden from a `<script>` or `<style>` start tag to the next
 * close of either, a space at every start and end tag; templates' text included).
 */
function tokenize(html: string, fn: ((tag: Tag) => void) | null, text: ((piece: string) => void) | null): void {
  let name = ''
  let end = false
  let attrs: Record<string, string> = {}
  let attrName = ''
  let attrValue = ''
  let template = 0
  let hidden = false
  const emit = (tag: Tag) => {
    if (fn === null) return
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
      if (fn === null) return
      attrName = html.slice(start, endIndex).toLowerCase()
      attrValue = ''
    },
    onattribdata(start, endIndex) {
      if (fn !== null) attrValue += html.slice(start, endIndex)
    },
    onattribentity(codepoint) {
      if (fn !== null) attrValue += String.fromCodePoint(codepoint)
    },
    onattribend() {
      if (fn !== null && !Object.hasOwn(attrs, attrName)) attrs[attrName] = attrValue
    },
    onopentagend() {
      emit({ name, attrs, end })
      if (text === null) return
      if (name === 'script' || name === 'style') hidden = true
      text(' ')
    },
    onselfclosingtag() {
      emit({ name, attrs, end })
    },
    onclosetag(start, endIndex) {
      const closed = html.slice(start, endIndex).toLowerCase()
      emit({ name: closed, attrs: {}, end: true })
      if (text === null) return
      if (closed === 'script' || closed === 'style') hidden = false
      text(' ')
    },
    ontext(start, endIndex) {
      if (text !== null && !hidden) text(html.slice(start, endIndex))
    },
    ontextentity(codepoint) {
      if (text !== null && !hidden) text(String.fromCodePoint(codepoint))
    },
    oncdata() {},
    oncomment() {},
    ondeclaration() {},
    onend() {},
    onprocessinginstruction() {},
  }
  const t = new Tokenizer({ decodeEntities: true }, cbs)
  t.write(html)
  t.end()
}
