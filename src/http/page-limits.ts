/**
 * The bounds of a list's paging, shared by the API (pagination.ts) and the deploy client's
 * options (cli/client/help.ts). Imports nothing, so the client loads no server code with it.
 */
/** The largest page a list takes: nine digits, so an offset stays an exact integer on both engines. */
export const MAX_PAGE = 999_999_999
/** The largest per_page of a list, unless a route sets a smaller one. */
export const MAX_PER_PAGE = 100
