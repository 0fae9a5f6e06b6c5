import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { isForbiddenAddress } from '../../src/features/forms/ssrf.js'

// What a webhook may reach with WEBHOOK_BLOCK_PRIVATE on: global unicast addresses only.
describe('webhook target addresses', () => {
  const forbidden = [
    '127.0.0.1',
    '10.0.0.1',
    '100.64.0.1',
    '169.254.169.254',
    '192.0.2.1',
    '198.51.100.1',
    '203.0.113.1',
    '224.0.0.1',
    '255.255.255.255',
    '0.0.0.0',
    '::',
    '::1',
    '::127.0.0.1',
    '::ffff:127.0.0.1',
    '::ffff:0:7f00:1',
    '64:ff9b::7f00:1',
    '2002:7f00:1::',
    '2001::1',
    '2001:db8::1',
    'fc00::1',
    'fe80::1',
    'fec0::1',
    'ff02::1',
    '100::1',
    'not-an-address',
  ]
  for (const ip of forbidden) it(`${ip}: refused`, () => assert.equal(isForbiddenAddress(ip), true))
  for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) it(`${ip}: allowed`, () => assert.equal(isForbiddenAddress(ip), false))
})
