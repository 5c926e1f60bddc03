// create_ticket on Powertools for AWS Lambda (TypeScript): the idempotency
// utility with its DynamoDB persistence layer, served over HTTP on loopback
// so that oncecall's benchmark (internal/bench/cmd/oncecall-bench) drives it with the same
// AIVAX callbacks it sends oncecall. Nonce verification is left out here, as
// it is left out of oncecall for that comparison.
//
// The same semantics as oncecall's create_ticket, written the way
// Powertools is meant to be used:
//   - the user record (pk "user#<id>") is read with a consistent GetItem and
//     cached per process for 30 s, as oncecall's USER_CACHE_TTL does; the
//     tenant comes from it, and the user must be active and granted
//     create_ticket;
//   - metadata.request_id is required; the arguments are validated with
//     oncecall's rules;
//   - the idempotency key is SHA-256 over the sorted JSON of [tenant,
//     request_id, function, arguments] (eventKeyJmesPath "key"), the record
//     lives in the same table under pk, with expires_at and a 24 h window;
//   - the handler writes the ticket item with its own PutItem, and returns
//     {status, ticket_id}; a replay returns the stored response with
//     deduplicated: true (responseHook), a key claimed by another user of the
//     tenant is a 403 request_id_conflict, an in-progress record answers
//     in_progress.
// What Powertools does not give: the idempotency record and the ticket are
// separate writes (saveInProgress PutItem, the handler's PutItem,
// saveSuccess UpdateItem), so a crash between them leaves an INPROGRESS
// record or a ticket without a completed record; and the user is not
// re-checked inside the write.

import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';

const endpoint = process.env.DYNAMODB_ENDPOINT;
const table = process.env.TABLE_NAME;
if (!endpoint || !table) {
  console.error('DYNAMODB_ENDPOINT and TABLE_NAME are required');
  process.exit(2);
}
if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(endpoint)) {
  console.error('DYNAMODB_ENDPOINT must be a loopback http:// URL');
  process.exit(2);
}

const MAX_BODY = 128 * 1024;
const USER_TTL_MS = 30_000;
const MAX_USERS = 10_000;
const PRIORITIES = ['low', 'normal', 'high', 'urgent'];
const ARGS = ['title', 'description', 'priority', 'tags'];

const client = new DynamoDBClient({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});

const persistenceStore = new DynamoDBPersistenceLayer({
  tableName: table,
  keyAttr: 'pk',
  expiryAttr: 'expires_at',
  awsSdkV3Client: client,
});

const config = new IdempotencyConfig({
  eventKeyJmesPath: 'key',
  throwOnNoIdempotencyKey: true,
  expiresAfterSeconds: 24 * 60 * 60,
  hashFunction: 'sha256',
  responseHook: (response) => ({ ...response, deduplicated: true }),
});

// The effect: one ticket item, written by the handler itself.
const createTicket = makeIdempotent(
  async (payload) => {
    const { tenant, request_id: requestId, arguments: a } = payload.key;
    const id = randomUUID();
    const item = {
      pk: { S: `ticket#${id}` },
      kind: { S: 'ticket' },
      tenant_id: { S: tenant },
      user_id: { S: payload.user },
      title: { S: a.title },
      priority: { S: a.priority ?? 'normal' },
      created_at: { S: new Date().toISOString() },
      request_id: { S: requestId },
    };
    if (a.description) item.description = { S: a.description };
    if (a.tags?.length) item.tags = { L: a.tags.map((t) => ({ S: t })) };
    await client.send(new PutItemCommand({
      TableName: table,
      Item: item,
      ConditionExpression: 'attribute_not_exists(pk)',
    }));
    return { status: 'created', ticket_id: id, user_id: payload.user };
  },
  { persistenceStore, config, keyPrefix: 'create_ticket' },
);

const users = new Map();

async function lookup(id) {
  const cached = users.get(id);
  if (cached && cached.expires > Date.now()) return cached.user;
  const out = await client.send(new GetItemCommand({
    TableName: table,
    Key: { pk: { S: `user#${id}` } },
    ConsistentRead: true,
  }));
  if (!out.Item) return null;
  const user = {
    id,
    tenant: out.Item.tenant_id?.S,
    active: out.Item.active?.BOOL === true,
    functions: out.Item.functions?.SS ?? [],
  };
  if (users.size >= MAX_USERS) users.clear();
  users.set(id, { user, expires: Date.now() + USER_TTL_MS });
  return user;
}

const chars = (s) => [...s].length;
const controls = /[\u0000-\u001f\u007f]/;
const controlsButLines = /[\u0000-\u0008\u000b-\u001f\u007f]/;

function validate(a) {
  const problems = [];
  if (typeof a.title !== 'string' || chars(a.title) < 1 || chars(a.title) > 200 || controls.test(a.title)) {
    problems.push('title must be 1 to 200 characters on one line');
  }
  if (a.description !== undefined && a.description !== null &&
      (typeof a.description !== 'string' || chars(a.description) > 8000 || controlsButLines.test(a.description))) {
    problems.push('description must be up to 8000 characters');
  }
  if (a.priority !== undefined && a.priority !== null && !PRIORITIES.includes(a.priority)) {
    problems.push(`priority must be one of ${PRIORITIES.join(', ')}`);
  }
  if (a.tags !== undefined && a.tags !== null) {
    if (!Array.isArray(a.tags) || a.tags.length > 10 ||
        a.tags.some((t) => typeof t !== 'string' || chars(t) < 1 || chars(t) > 32 || controls.test(t)) ||
        new Set(a.tags).size !== a.tags.length) {
      problems.push('tags must be up to 10 distinct labels of 1 to 32 characters');
    }
  }
  const unknown = Object.keys(a).filter((k) => !ARGS.includes(k));
  if (unknown.length) problems.push(`${unknown.join(', ')} not accepted`);
  return problems;
}

const reject = (code, message) => [200, { status: 'rejected', error: { code, message } }];
const forbid = (code, message) => [403, { status: 'forbidden', error: { code, message } }];

async function callback(body) {
  let req;
  try {
    req = JSON.parse(body);
  } catch {
    return [400, { status: 'rejected', error: { code: 'invalid_request', message: 'the body is not JSON' } }];
  }
  const fn = req?.function;
  const ctx = req?.context ?? {};
  if (typeof fn?.name !== 'string') return [400, { status: 'rejected', error: { code: 'invalid_request', message: 'function.name is missing' } }];
  if (fn.name !== 'create_ticket') return reject('unknown_function', 'this peer serves create_ticket');
  const userId = ctx.externalUserId;
  if (!userId) return reject('missing_user', 'context.externalUserId is missing');
  const user = await lookup(userId);
  if (!user) return forbid('unknown_user', 'not a user of this service');
  if (!user.active) return forbid('user_disabled', 'this user is disabled');
  if (!user.functions.includes('create_ticket')) return forbid('function_not_granted', 'this user may not call create_ticket');
  const args = fn.content ?? {};
  if (typeof args !== 'object' || Array.isArray(args)) return reject('invalid_arguments', 'function.content must be an object');
  const problems = validate(args);
  if (problems.length) return reject('invalid_arguments', problems.join('; '));
  const rid = ctx.metadata?.request_id;
  if (!rid) return reject('missing_request_id', 'context.metadata.request_id is missing');
  if (rid.length > 128 || !/^[\x21-\x7e]+$/.test(rid)) return reject('invalid_request_id', 'request_id must be visible ASCII');

  let result;
  try {
    result = await createTicket({
      key: { tenant: user.tenant, request_id: rid, function: 'create_ticket', arguments: args },
      user: user.id,
    });
  } catch (e) {
    if (e?.name === 'IdempotencyAlreadyInProgressError') {
      return [200, { status: 'in_progress', retryable: true, message: 'This operation is already in progress.' }];
    }
    throw e;
  }
  if (result.user_id !== user.id) return forbid('request_id_conflict', "This request_id already belongs to another user's operation.");
  return [200, { status: result.status, ticket_id: result.ticket_id, deduplicated: result.deduplicated === true }];
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/callback') {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"status":"rejected"}');
    return;
  }
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size <= MAX_BODY) chunks.push(c);
  });
  req.on('end', () => {
    const reply = size > MAX_BODY
      ? Promise.resolve(reject('too_large', 'the body is too large'))
      : callback(Buffer.concat(chunks).toString('utf8'));
    reply
      .catch((e) => {
        console.error(e?.name ?? 'error');
        return [500, { status: 'error', error: { code: 'internal', message: 'Internal error.' } }];
      })
      .then(([status, body]) => {
        res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify(body));
      });
  });
});

server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  console.log(`http://127.0.0.1:${port}/callback`);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => server.close(() => process.exit(0)));
}
