//! `tapec jupyter install`: the kernelspec Jupyter reads to start tapec as
//! the "Tape" kernel — `kernel.json` and two logos — written into one of
//! the folders Jupyter looks in. It writes files only; it never starts a
//! kernel or reads a notebook.

use std::path::{Path, PathBuf};

/// The kernel's name: the folder under `kernels/`, and what a notebook's
/// metadata names.
pub const KERNEL_NAME: &str = "tape";

/// Where to install, as `jupyter kernelspec install` chooses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The user's Jupyter data folder (`$JUPYTER_DATA_DIR`, else the
    /// platform's: `~/.local/share/jupyter` on Linux).
    User,
    /// The Python environment's `share/jupyter` (`$VIRTUAL_ENV`, else the
    /// `sys.prefix` of `python3`).
    SysPrefix,
    /// `DIR/share/jupyter`.
    Prefix(PathBuf),
}

/// The folder `kernels/tape` for a place.
pub fn kernel_dir(place: &Place) -> Result<PathBuf, String> {
    let data = match place {
        Place::User => user_data_dir()?,
        Place::SysPrefix => sys_prefix()?.join("share").join("jupyter"),
        Place::Prefix(dir) => dir.join("share").join("jupyter"),
    };
    Ok(data.join("kernels").join(KERNEL_NAME))
}

fn user_data_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("JUPYTER_DATA_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if cfg!(windows) {
        let appdata = std::env::var_os("APPDATA").ok_or("APPDATA is not set")?;
        return Ok(PathBuf::from(appdata).join("jupyter"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("HOME is not set, so there is no user folder to install into")?;
    let home = PathBuf::from(home);
    if cfg!(target_os = "macos") {
        return Ok(home.join("Library").join("Jupyter"));
    }
    match std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        Some(data) => Ok(PathBuf::from(data).join("jupyter")),
        None => Ok(home.join(".local").join("share").join("jupyter")),
    }
}

/// The Python environment's prefix: the active virtual environment's, or
/// what `python3` says its `sys.prefix` is.
fn sys_prefix() -> Result<PathBuf, String> {
    if let Some(env) = std::env::var_os("VIRTUAL_ENV").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(env));
    }
    let output = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .map_err(|e| format!("cannot ask python3 for its sys.prefix: {e}"))?;
    let prefix = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if !output.status.success() || prefix.is_empty() {
        return Err("python3 did not say its sys.prefix".to_string());
    }
    Ok(PathBuf::from(prefix))
}

/// `kernel.json`: Jupyter starts `tapec jupyter kernel CONNECTION_FILE`
/// with the executable's absolute path, so the kernel runs whatever the
/// notebook's PATH holds.
pub fn kernel_json(executable: &Path) -> String {
    let spec = serde_json::json!({
        "argv": [
            executable.display().to_string(),
            "jupyter",
            "kernel",
            "{connection_file}",
        ],
        "display_name": "Tape",
        "language": "tape",
        "interrupt_mode": "signal",
        "metadata": { "debugger": false },
    });
    serde_json::to_string_pretty(&spec).expect("a JSON value prints") + "\n"
}

/// The logo: a cassette's two reels and the tape between them, drawn as
/// SVG (shapes only, so no font is needed).
pub fn logo_svg() -> &'static str {
    r##"<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
<rect x="2" y="8" width="60" height="48" rx="8" fill="#1f4e79"/>
<rect x="10" y="16" width="44" height="22" rx="4" fill="#f4f1e8"/>
<circle cx="22" cy="27" r="7" fill="#1f4e79"/>
<circle cx="42" cy="27" r="7" fill="#1f4e79"/>
<circle cx="22" cy="27" r="2.5" fill="#f4f1e8"/>
<circle cx="42" cy="27" r="2.5" fill="#f4f1e8"/>
<path d="M22 34 L42 34" stroke="#d62728" stroke-width="3"/>
<path d="M16 56 L22 44 L42 44 L48 56 Z" fill="#f4f1e8"/>
</svg>
"##
}

/// The logo rasterised by resvg at `size`×`size` pixels.
pub fn logo_png(size: u32) -> Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    let tree =
        usvg::Tree::from_str(logo_svg(), &usvg::Options::default()).map_err(|e| e.to_string())?;
    let mut pixmap = tiny_skia::Pixmap::new(size, size).ok_or("a logo of no pixels")?;
    let scale = size as f32 / tree.size().width();
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| e.to_string())
}

/// Writes the kernelspec for `executable` into `place`'s folder, and
/// returns that folder.
pub fn install(place: &Place, executable: &Path) -> Result<PathBuf, String> {
    let dir = kernel_dir(place)?;
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| {
            format!(
                "cannot write `{}`: {}",
                path.display(),
                crate::diagnostic::io_write_reason(&e, &path)
            )
        })
    };
    std::fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "cannot make the folder `{}`: {}",
            dir.display(),
            crate::diagnostic::io_write_reason(&e, &dir)
        )
    })?;
    write("kernel.json", kernel_json(executable).as_bytes())?;
    write("logo-svg.svg", logo_svg().as_bytes())?;
    for size in [32, 64] {
        write(&format!("logo-{size}x{size}.png"), &logo_png(size)?)?;
    }
    Ok(dir)
}
