//! The process's allocator: mimalloc (glibc's malloc and free took a fifth of the CPU per call
//! under load, ADR 19), with its arenas committed as they are used (ADR 33).
//!
//! mimalloc commits a whole arena at once where the system overcommits (Linux). Memory given
//! back in such an arena is only marked reusable and stays resident; committed as used, it is
//! returned to the system. Under `tests/bench/load.sh` the server's peak resident memory fell
//! from about 35 MiB to about 28 MiB, with no change in CPU per call shown.
//!
//! The option is set as the executable is loaded, before Rust's runtime starts: the first
//! allocation reserves the first arena with the option as it is then, and nothing of Rust's
//! can allocate before an initializer runs. It reads no environment (that would allocate), so
//! it overrides `MIMALLOC_ARENA_EAGER_COMMIT`. Other systems do not commit eagerly: nothing to
//! change there.

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod at_load {
    /// mimalloc's option `arena_eager_commit` (`mi_option_e` in `mimalloc.h`, the same
    /// number in mimalloc 2 and 3); `libmimalloc-sys` names no constant for it. Check it
    /// against `c_src/mimalloc/*/include/mimalloc.h` whenever `libmimalloc-sys` is upgraded.
    const ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

    // mimalloc's own symbol, compiled and linked by `libmimalloc-sys`.
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }

    /// Run by the loader with the executable's other initializers (`.init_array`).
    #[used]
    #[unsafe(link_section = ".init_array")]
    static COMMIT_ON_DEMAND: extern "C" fn() = commit_on_demand;

    extern "C" fn commit_on_demand() {
        // SAFETY: it takes plain integers and only stores the option's value in mimalloc's
        // table (an option number out of range is ignored); nothing else runs yet.
        unsafe { mi_option_set(ARENA_EAGER_COMMIT, 0) }
    }
}
