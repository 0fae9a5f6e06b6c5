import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { expectError } from '../support/errors.js'
import { ENGINES, startServer, type Res, type TestServer } from '../support/server.js'

// a form's slug and the accounts that race for it (decision 264: a slug never goes to another
// account, held or not), on both engines; the interleavings need PostgreSQL's locks
const HIGH = JSON.stringify(
  Object.fromEntries(['default', 'authenticated', 'vip'].map((t) => [t, { minute: 100000, hour: 100000, day: 100000, concurrent: 200 }])),
)

type User = Awaited<ReturnType<TestServer['user']>>

for (const engine of ENGINES) {
  describe(`form slugs raced [${engine}]`, () => {
    let s: TestServer
    let seq = 0
    const slug = (p: string) => `${p}-${engine}-${++seq}-${Math.random().toString(36).slice(2, 8)}`
    const create = (u: User, formSlug: string) => s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Contact', form_slug: formSlug } })
    const rename = (u: User, id: string, formSlug: string) => s.request('PUT', `/svc_api/forms/update/${id}`, { key: u.key, json: { form_slug: formSlug } })
    const remove = (u: User, id: string) => s.request('DELETE', `/svc_api/forms/delete/${id}`, { key: u.key })
    /** Who has the slug: the owner of its form, and the account holding it. */
    const owners = async (formSlug: string) => {
      const key = formSlug.toLowerCase()
      const forms = await s.deps.db.k.selectFrom('forms').select('user_id').where('slug_key', '=', key).execute()
      const held = await s.deps.db.k.selectFrom('form_slugs_held').select('user_id').where('slug_key', '=', key).execute()
      return { form: forms.map((r) => r.user_id), held: held.map((r) => r.user_id) }
    }

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH } })
    })
    after(() => s.close())

    it('parallel creates of one slug by different accounts: one gets it, the others 1610', async () => {
      const users = await Promise.all(Array.from({ length: 8 }, () => s.user()))
      const sl = slug('Together')
      const rs = await Promise.all(users.map((u) => create(u, sl)))
      const won = rs.flatMap((r, i) => (r.status === 200 ? [users[i].id] : []))
      assert.equal(won.length, 1, rs.map((r) => r.text).join('\n'))
      for (const r of rs) if (r.status !== 200) expectError(r, 400, 1610)
      assert.deepEqual(await owners(sl), { form: won, held: [] })
    })

    it('a delete racing creates of its slug by other accounts: the slug stays its owner’s', async () => {
      const [ann, ...others] = await Promise.all(Array.from({ length: 7 }, () => s.user()))
      const sl = slug('Leaving')
      const made = await create(ann, sl)
      assert.equal(made.status, 200, made.text)
      const [del, ...rs] = await Promise.all([remove(ann, made.json.data.id), ...others.map((u) => create(u, sl))])
      assert.equal(del.status, 200, del.text)
      for (const r of rs) expectError(r, 400, 1610)
      assert.deepEqual(await owners(sl), { form: [], held: [ann.id] })
    })

    // PostgreSQL's read committed: each statement sees what committed before it, so between a
    // transaction's read of a slug and its write another account's transactions may commit
    if (engine === 'postgres')
      describe('another account takes and leaves the slug between a transaction’s read and its write', () => {
        /** The backends waiting, directly or not, on `holder`. */
        const waiting = async (holder: number): Promise<number> => {
          const r = await sql<{ n: string }>`with recursive w(pid) as (
              select pid from pg_stat_activity where ${holder} = any(pg_blocking_pids(pid))
              union select a.pid from pg_stat_activity a join w on w.pid = any(pg_blocking_pids(a.pid)))
            select count(*) as n from w`.execute(s.deps.db.k)
          return Number(r.rows[0].n)
        }
        const until = async (ok: () => Promise<boolean>) => {
          for (let i = 0; i < 500 && !(await ok()); i++) await new Promise((r) => setTimeout(r, 20))
          assert.ok(await ok(), 'the interleaving never came')
        }

        /**
         * Holds the row `lock` locks while ben's write (`write`: it reads the slug, then queues on
         * that row) waits; ann meanwhile creates the slug and, if she got it, deletes it (so it is
         * held for her); then the row is released and ben's write goes on.
         */
        const interleave = async (ann: User, sl: string, lock: (conn: any) => Promise<unknown>, write: () => Promise<Res>) =>
          s.deps.db.k.connection().execute(async (conn) => {
            await sql`begin`.execute(conn)
            const holder = Number((await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn)).rows[0].pid)
            await lock(conn)
            const bens = write()
            await until(async () => (await waiting(holder)) === 1)
            // ann's create either ends (nothing keeps it from the slug) or queues behind ben's write
            let annCreated: Res | undefined
            const anns = create(ann, sl).then((r) => (annCreated = r))
            await until(async () => annCreated !== undefined || (await waiting(holder)) === 2)
            let annDeleted: Res | undefined
            if (annCreated?.status === 200) annDeleted = await remove(ann, annCreated.json.data.id)
            await sql`rollback`.execute(conn)
            return { ben: await bens, ann: await anns, annDeleted }
          })

        it('a create', async () => {
          const [ann, ben] = [await s.user(), await s.user()]
          // ben's form count has its row, which the holder locks: his create's insert queues on it
          assert.equal((await create(ben, slug('first'))).status, 200)
          const sl = slug('Raced')
          const r = await interleave(
            ann,
            sl,
            (conn) => conn.selectFrom('usage').select('n').where('user_id', '=', ben.id).where('kind', '=', 'forms').forUpdate().execute(),
            () => create(ben, sl),
          )
          assert.equal(r.ben.status, 200, r.ben.text)
          expectError(r.ann, 400, 1610)
          assert.equal(r.annDeleted, undefined)
          assert.deepEqual(await owners(sl), { form: [ben.id], held: [] })
        })

        it('a rename', async () => {
          const [ann, ben] = [await s.user(), await s.user()]
          const mine = await create(ben, slug('mine'))
          assert.equal(mine.status, 200, mine.text)
          const id = mine.json.data.id as string
          const sl = slug('Raced')
          const r = await interleave(
            ann,
            sl,
            (conn) => conn.selectFrom('forms').select('id').where('id', '=', id).forUpdate().execute(),
            () => rename(ben, id, sl),
          )
          assert.equal(r.ben.status, 200, r.ben.text)
          expectError(r.ann, 400, 1610)
          assert.equal(r.annDeleted, undefined)
          assert.deepEqual(await owners(sl), { form: [ben.id], held: [] })
        })
      })
  })
}
