'use strict';
// require('symphony-ws').allocator: the private allocator that holds all of
// symphony's native memory (jemalloc by default; the system allocator in the
// system build). Node's own heap and malloc are never touched.

const { binding, path: nativePath } = require('./native');
const { invalidArgType, outOfRange } = require('./errors');

const native = binding.allocator;
// setDecay's range, from the binding (binding/allocator.c), which checks it too.
const { DECAY_MS_MIN, DECAY_MS_MAX } = native;

function checkDecay(name, value) {
  if (typeof value !== 'number') throw invalidArgType(name, 'of type number', value);
  if (!Number.isInteger(value) || value < DECAY_MS_MIN || value > DECAY_MS_MAX) {
    throw outOfRange(name, `an integer >= ${DECAY_MS_MIN} and <= ${DECAY_MS_MAX}`, value);
  }
}

const allocator = {
  /** 'jemalloc' or 'system'. */
  name: native.name,
  /** jemalloc's version, or the C library's in the system build. */
  version: native.version,
  /** The build marker: "symphony-build: allocator=jemalloc-5.3.0 lg-page=12 libc=glibc arch=x64". */
  build: native.build,
  /** jemalloc's compiled page size in bytes (null in the system build). */
  pageSize: native.pageSize,
  /** The file the addon was loaded from. */
  nativePath,

  /** The configuration in force (opt.* values and the strings); null in the system build. */
  get config() {
    return native.config();
  },

  /** Allocator statistics in bytes, fresh; null where the build cannot know. */
  stats() {
    return native.stats();
  },

  /**
   * Per-arena pages in bytes, fresh: [{ arena, active, dirty, muzzy, resident }]
   * for every arena (0: the JS thread's; one per IO thread, see
   * server.stats().threads[i].arena). null in the system build.
   */
  arenaStats() {
    return native.arenaStats();
  },

  /**
   * jemalloc's full statistics report (malloc_stats_print): per size class,
   * per arena, extents, mutexes. { json: true } parses its JSON form. For a
   * person or a support ticket; stats() and arenaStats() are the cheap calls.
   * null in the system build.
   */
  report(opts = {}) {
    if (opts === null || typeof opts !== 'object') throw invalidArgType('opts', 'an object', opts);
    const json = opts.json ?? false;
    if (typeof json !== 'boolean') throw invalidArgType('opts.json', 'of type boolean', json);
    const text = native.report(json, '');
    if (text === null) return null;
    return json ? JSON.parse(text) : text;
  },

  /**
   * Proves which allocator serves symphony's native memory, OpenSSL's
   * included: a live block of ours and one of libc malloc asked of jemalloc,
   * and an object OpenSSL allocates, a libdeflate decompressor and a hiredis
   * reply reader, which must come through our allocator and be owned by our
   * jemalloc.
   */
  selfCheck() {
    const r = native.selfCheck();
    const expectJemalloc = native.name === 'jemalloc';
    const tlsOk = r.tlsLinked && r.tlsRouted && r.tlsIsJemalloc === expectJemalloc;
    const deflateOk = r.deflateRouted && r.deflateIsJemalloc === expectJemalloc;
    const redisOk = r.redisRouted && r.redisIsJemalloc === expectJemalloc;
    const ok = tlsOk && deflateOk && redisOk && (expectJemalloc
      ? r.jemallocLinked && r.oursIsJemalloc && !r.libcIsJemalloc
      : !r.jemallocLinked && !r.oursIsJemalloc);
    return {
      ok,
      allocator: native.name,
      checked: (expectJemalloc
        ? `a live ${r.probeSize}-byte block from symphony's allocator and one from libc malloc, asked of jemalloc (arenas.lookup)`
        : 'the build has no jemalloc linked (system allocator build)') +
        '; an object OpenSSL allocated, a libdeflate decompressor and a hiredis reader came through symphony\'s allocator' +
        (expectJemalloc ? ' and are owned by its jemalloc' : ''),
      ...r,
    };
  },

  /**
   * The private OpenSSL inside the addon: { version, allocated, allocations }
   * (bytes it holds through symphony's allocator now, allocations it ever
   * made there). Node's own OpenSSL never shows up here.
   */
  tls() {
    return native.tlsInfo();
  },

  /** Returns unused dirty pages of every arena to the OS now. False if the build cannot. */
  purge() {
    return native.purge();
  },

  /**
   * Sets decay times (ms) of every arena: how long freed pages stay before
   * they go back to the OS. -1 keeps them; 0 returns them at once.
   */
  setDecay(opts) {
    if (opts === null || typeof opts !== 'object') throw invalidArgType('opts', 'an object', opts);
    const cfg = native.config();
    const dirtyMs = opts.dirtyMs ?? (cfg ? cfg.dirtyDecayMs : 0);
    const muzzyMs = opts.muzzyMs ?? (cfg ? cfg.muzzyDecayMs : 0);
    checkDecay('opts.dirtyMs', dirtyMs);
    checkDecay('opts.muzzyMs', muzzyMs);
    return native.setDecay(dirtyMs, muzzyMs);
  },

  /** Turns jemalloc's background purge threads on or off. False if the build cannot. */
  backgroundThread(enabled) {
    if (typeof enabled !== 'boolean') throw invalidArgType('enabled', 'of type boolean', enabled);
    return native.backgroundThread(enabled);
  },
};

module.exports = allocator;
