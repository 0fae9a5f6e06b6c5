/** Bus channel of the image links' cache: a message is a public token whose cached lookup must be dropped (FLUSH_ALL: all). */
export const BUS_CHANNEL = 'image-host'
