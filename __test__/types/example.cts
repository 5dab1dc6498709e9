// The same package from a CommonJS TypeScript file (require).
import symphony = require('symphony-ws');

const server = new symphony.Server({ port: 0, compression: true });
server.on('message', (id: number, data: Buffer) => server.publish('all', data));
void server.listen().then(({ port }) => console.log(port, symphony.allocator.name));
