/*
 * A callback receiver that runs in a container on the compose network (the bridge POSTs to
 * http://receiver:8080/...). It records every request and answers 200; GET /received (through
 * the published port) returns what it recorded. No dependencies: it runs on the bare node image.
 */
const { createServer } = require('node:http');

const received = [];
createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/received') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(received));
    return;
  }
  let body = '';
  req.on('data', (chunk) => {
    body += chunk;
  });
  req.on('end', () => {
    received.push({ method: req.method, path: req.url, headers: req.headers, body });
    res.writeHead(200);
    res.end();
  });
}).listen(8080, '0.0.0.0', () => console.log('callback receiver listening on 8080'));
