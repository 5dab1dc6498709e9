// The same package from a CommonJS TypeScript file (require).
import symphony = require('symphony-ws');

const server = new symphony.Server({ port: 0, compression: true });
server.on('message', (id: number, data: Buffer) => server.publish('all', data));
void server.listen().then(({ port }) => console.log(port, symphony.allocator.name));

// Server<UserData>: inferred from onUpgrade's data, or written.
const rooms = new symphony.Server({
  noServer: true,
  onUpgrade: (req) => (req.url === '/' ? { status: 400 } : { topics: ['lobby'], data: { room: 'lobby', since: Date.now() } }),
});
rooms.on('open', (id, info) => { const room: string = info.data.room; void room; });
const since: number = rooms.getUserData(1).since;
const named = new symphony.Server<{ user: string }>({ noServer: true, onUpgrade: () => ({ data: { user: 'ann' } }) });
const user: string = named.getUserData(2).user;
void since; void user;
// @ts-expect-error: data of another shape than the one written
void new symphony.Server<{ user: string }>({ noServer: true, onUpgrade: () => ({ data: { name: 'ann' } }) });
// A HookError names its hook and says whether it threw.
rooms.on('error', (err) => {
  if (err instanceof symphony.HookError) { const hook: symphony.HookName = err.hook; const code: 'ERR_SYMPHONY_HOOK_ANSWER' | 'ERR_SYMPHONY_HOOK_THREW' = err.code; void hook; void code; }
});
