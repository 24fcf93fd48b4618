//! The foreign-function boundary: loading a compiled kernel and calling it, and
//! asking whether a loaded library defines a symbol. This is the crate's only `unsafe`
//! code; each block states what it relies on.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::run::{Args, Element};

/// A loaded shared object containing one generated kernel.
pub(crate) struct Library {
    /// `None` only during drop.
    lib: Option<libloading::Library>,
    /// Never unload: an OpenMP kernel's worker threads stay parked in libgomp after
    /// a call, and unloading the last user of libgomp would unmap the code they
    /// run (a crash later, in whichever thread wakes first).
    keep_loaded: bool,
}

impl Drop for Library {
    fn drop(&mut self) {
        if self.keep_loaded {
            std::mem::forget(self.lib.take());
        }
    }
}

impl Library {
    pub(crate) fn open(path: &Path, keep_loaded: bool) -> Result<Library, String> {
        // SAFETY: loading a shared object runs its initializers. This one was just
        // compiled by `compile` from generated C that defines no constructors and
        // links nothing but libc, libm and (with OpenMP) libgomp, whose initializer
        // only reads its environment variables, so loading has no other effect.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
        Ok(Library {
            lib: Some(lib),
            keep_loaded,
        })
    }

    /// Calls `atl__packed_SYMBOL(sizes, inputs, out)` and returns the time it took and
    /// the kernel's status (0, or the number of the precondition that failed).
    pub(crate) fn call<T: Element>(
        &self,
        symbol: &str,
        args: &mut Args<T>,
    ) -> Result<(Duration, i32), String> {
        type Packed<T> =
            unsafe extern "C" fn(*const i64, *const *const std::ffi::c_void, *mut T) -> i32;
        let name = format!("{}\0", crate::packed_symbol(symbol));
        // SAFETY: `crate::packed_wrapper` defines this symbol with exactly the C
        // signature `int(const int64_t *, const void *const *, T *)`, and
        // `Compiled::run` only calls `call::<T>` with the `T` (f32 = float, f64 =
        // double) the library was generated for; each input buffer holds the element
        // type the wrapper converts its pointer to (`InputData`).
        let f: libloading::Symbol<'_, Packed<T>> = unsafe {
            self.lib
                .as_ref()
                .ok_or("the library was unloaded")?
                .get(name.as_bytes())
        }
        .map_err(|e| e.to_string())?;
        let inputs: Vec<*const std::ffi::c_void> = args.inputs.iter().map(|v| v.as_ptr()).collect();
        let start = Instant::now();
        // SAFETY: `Args` is only built by `Args::new` from a call that
        // `atl_lower::check_call` accepted: one value per size, in ABI order, satisfying
        // every precondition of the kernel; one buffer per input holding exactly the
        // elements of its declared shape at those sizes; an output buffer of exactly
        // the output's elements. Lowering guarantees that under these conditions every
        // read stays inside the input and temporary buffers (unproved reads are
        // bounds-checked) and every write inside the output (truncated elements are
        // guarded), which the loop-IR interpreter and the AddressSanitizer runs of the
        // differential tests check. The buffers are distinct allocations, as
        // `restrict` requires, and outlive the call; the kernel keeps no pointer.
        let status = unsafe { f(args.sizes.as_ptr(), inputs.as_ptr(), args.out.as_mut_ptr()) };
        Ok((start.elapsed(), status))
    }

    /// Calls `SYMBOL_set_threads(n)`, the kernel's own thread control.
    pub(crate) fn set_threads(&mut self, symbol: &str, n: i32) -> Result<(), String> {
        type SetThreads = unsafe extern "C" fn(i32);
        let name = format!("{}\0", crate::set_threads_symbol(symbol));
        // SAFETY: the emitted source (`cprint::CPrinter::source`) defines this symbol
        // as `void(int)`.
        let f: libloading::Symbol<'_, SetThreads> = unsafe {
            self.lib
                .as_ref()
                .ok_or("the library was unloaded")?
                .get(name.as_bytes())
        }
        .map_err(|e| e.to_string())?;
        // SAFETY: the function only stores `n` in a file-scope `int` of the kernel's
        // own object (or does nothing); it touches no memory of ours. No call of the
        // kernel runs meanwhile, since that needs a `&self` borrow of this library
        // and this function holds the `&mut` one.
        unsafe { f(n) };
        Ok(())
    }
}

/// Whether a library of this process (the C library above all) defines `symbol`: a
/// lookup in the process's global scope (`dlsym(RTLD_DEFAULT, …)`). Kernels' own
/// libraries are loaded locally, so they are not in it.
#[cfg(unix)]
pub(crate) fn defined_by_a_loaded_library(symbol: &str) -> bool {
    let this = libloading::os::unix::Library::this();
    // SAFETY: only the symbol's address is looked up; nothing is called or read
    // through it.
    unsafe { this.get::<*const std::ffi::c_void>(symbol.as_bytes()) }.is_ok()
}

#[cfg(not(unix))]
pub(crate) fn defined_by_a_loaded_library(_symbol: &str) -> bool {
    false
}
