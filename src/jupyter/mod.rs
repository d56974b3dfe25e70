//! `tapec jupyter`: tapec as a Jupyter kernel. `install` writes the
//! kernelspec (`kernelspec.rs`); `kernel` serves a notebook over the
//! messaging protocol (`kernel.rs`), running its cells on the REPL's
//! session (`cells.rs`).
//!
//! The fence: only `kernel.rs` knows the protocol crates, zeromq and the
//! async runtime, and it is built only with the `jupyter` feature (on by
//! default); the runtime is started by `tapec jupyter kernel` alone, so
//! every other command runs as if the kernel were not there.

pub mod cells;
#[cfg(feature = "jupyter")]
pub mod kernel;
pub mod kernelspec;

/// Runs the kernel on a connection file; the exit status.
pub fn run_kernel(connection_file: &std::path::Path) -> i32 {
    #[cfg(feature = "jupyter")]
    {
        kernel::run(connection_file)
    }
    #[cfg(not(feature = "jupyter"))]
    {
        let _ = connection_file;
        eprintln!("tapec jupyter kernel: this tapec was built without the `jupyter` feature");
        2
    }
}
