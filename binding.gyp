# symphony's native addon. Built by scripts/build.js, which passes:
#   --sy_allocator=jemalloc|system   which allocator backs src/sy_alloc.c
#   --sy_jemalloc_dir=DIR            jemalloc's build folder (deps/jemalloc.sh)
{
  'variables': {
    'sy_allocator%': 'jemalloc',
    'sy_jemalloc_dir%': '',
  },
  'targets': [
    {
      'target_name': 'symphony',
      'sources': ['<!@(ls -1 src/*.c binding/*.c)'],
      'include_dirs': ['src'],
      'defines': ['NAPI_VERSION=8'],
      'cflags_c': [
        '-std=c11', '-Wall', '-Wextra', '-Werror', '-O2',
        '-fvisibility=hidden', '-fno-strict-aliasing',
      ],
      'ldflags': [
        '-static-libgcc',
        '-Wl,--version-script=<(module_root_dir)/binding/exports.map',
        '-Wl,-z,now',
        # Never unmapped by dlclose (Node unloads an addon when the last
        # worker that loaded it exits): jemalloc registers pthread key
        # destructors that run at every thread's exit, so its code must stay.
        '-Wl,-z,nodelete',
      ],
      'libraries': ['-lpthread'],
      'conditions': [
        ['sy_allocator=="jemalloc"', {
          'defines': ['SY_USE_JEMALLOC'],
          'include_dirs': ['<(sy_jemalloc_dir)/include'],
          'libraries': ['<(sy_jemalloc_dir)/lib/libjemalloc_pic.a'],
          'ldflags': ['-Wl,--exclude-libs,ALL'],
        }],
      ],
    },
  ],
}
