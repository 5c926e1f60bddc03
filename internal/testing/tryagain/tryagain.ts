// The application's side of a user's "try again" in TypeScript, as
// docs/connect-aivax.md shows it (a test holds the page's code to this
// file and runs it against the local server with Node 22's
// --experimental-strip-types). Only erasable type syntax: no enums, no
// namespaces.

interface Outcome {
  status: "none" | "found";
  function?: string;
  ticket_id?: string;
}

// readOutcome asks oncecall what it holds for the user's request id.
// Locally the credential is the key make run logs; on AWS, sign the
// request with SigV4 instead (service execute-api), as a role allowed
// OutcomeRouteArn.
export async function readOutcome(base: string, key: string, user: string, requestId: string): Promise<Outcome> {
  const q = new URLSearchParams({ user, request_id: requestId });
  const res = await fetch(`${base}/outcome?${q}`, { headers: { Authorization: `Bearer ${key}` } });
  if (res.status !== 200) throw new Error(`outcome read: HTTP ${res.status}`);
  return (await res.json()) as Outcome;
}

// tryAgain handles the user's "try again" of the operation sent under
// requestId, whose answer never arrived: send stands for your call to
// AIVAX with the user and metadata.request_id.
export async function tryAgain(
  base: string, key: string, user: string, requestId: string,
  send: (requestId: string) => Promise<void>,
): Promise<{ ticketId?: string; sent: boolean }> {
  const first = await readOutcome(base, key, user, requestId);
  if (first.status === "found") {
    // The first attempt did create it: tell the user, send nothing.
    return { ticketId: first.ticket_id, sent: false };
  }
  // Nothing stored: the same id again, never a new one.
  await send(requestId);
  const after = await readOutcome(base, key, user, requestId);
  return { ticketId: after.ticket_id, sent: true };
}

// Run as a program (the test does): node --experimental-strip-types
// tryagain.ts BASE KEY NONCE. It walks the lost-answer case and prints
// one JSON line.
async function main(): Promise<void> {
  const [base, key, nonce] = process.argv.slice(2);
  let sends = 0;
  const send = async (requestId: string): Promise<void> => {
    sends++;
    const res = await fetch(`${base}/callback`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Request-Nonce": nonce },
      body: JSON.stringify({
        type: "tool_call",
        function: { name: "create_ticket", content: { title: "VPN drops every hour" } },
        context: { externalUserId: "user-a", metadata: { request_id: requestId } },
      }),
    });
    await res.text(); // the answer is lost on its way to the application
  };
  await send("ts-lost-1"); // created; the answer never reaches the app
  const lost = await tryAgain(base, key, "user-a", "ts-lost-1", send);
  const never = await readOutcome(base, key, "user-a", "ts-never-sent");
  console.log(JSON.stringify({ lost, sends, never: never.status }));
}

if (process.argv[1]?.endsWith("tryagain.ts")) {
  await main();
}
