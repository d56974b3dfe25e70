//! `Save` and `Load`: a matrix as text, one row a line, each number in the
//! shortest decimal that reads back to the same bits.

use std::io::Write;
use std::path::Path;

use ndarray::Array2;

/// The text `Save` writes: each number as Rust's `{:?}` spells an f64
/// (`0.1`, `1e308`, `-0.0`, `inf`), one space between numbers, a newline
/// after each row.
pub fn matrix_text(m: &Array2<f64>) -> String {
    let mut text = String::new();
    for row in m.rows() {
        for (j, x) in row.iter().enumerate() {
            if j > 0 {
                text.push(' ');
            }
            text.push_str(&format!("{x:?}"));
        }
        text.push('\n');
    }
    text
}

/// Whether two paths name one existing file (through links and `..`).
pub fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// Writes `text` to `path` whole or not at all: to a temporary file beside
/// it, then renamed over it. The temporary file is the writer's own (its
/// process and a number of the process's), so two programs of one process
/// saving to one path never rename each other's. As writing in place
/// would, it writes through a symbolic link to the file it names (in
/// place, if that file does not exist yet), refuses a file this user may
/// not write, and leaves an existing file's permissions as they were (but
/// set-user and set-group, which a write clears).
pub fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    static WRITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let followed = std::fs::canonicalize(path);
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link && followed.is_err() {
        // A link to no file yet, or a loop: written through as it is.
        return std::fs::write(path, text);
    }
    let path = followed.as_deref().unwrap_or(path);
    let existing = std::fs::metadata(path).ok().filter(|m| m.is_file());
    if let Some(existing) = &existing {
        // A read-only file stays as it is, for a user whom the system
        // would let write it too (root).
        if existing.permissions().readonly() {
            return Err(std::io::ErrorKind::PermissionDenied.into());
        }
        // Asked as writing in place asks: opened to write, nothing changed.
        std::fs::OpenOptions::new().write(true).open(path)?;
    }
    let kept = existing.map(|m| kept_permissions(m.permissions()));
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = path.with_file_name(format!(".{name}.{}.{n}.partial", std::process::id()));
    let written = std::fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(text.as_bytes())?;
        if let Some(permissions) = kept {
            file.set_permissions(permissions)?;
        }
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    renamed
}

/// A file's bytes, but at most `limit` and one more: a file too large, or
/// endless as `/dev/zero` is, is read only far enough to be refused. Room
/// for each larger buffer is asked for first ([`crate::memory::room_for`]):
/// memory the system refuses is an `OutOfMemory` error, not the end of the
/// run.
pub fn read_at_most(path: &Path, limit: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?.take(limit as u64 + 1);
    let mut bytes = Vec::new();
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            let size = (bytes.len() * 2).max(8 << 10).min(limit + 1);
            // The old buffer and the new one, while the bytes move over.
            if !crate::memory::room_for(bytes.len() + size) {
                return Err(std::io::ErrorKind::OutOfMemory.into());
            }
            bytes.resize(size.max(filled + 1), 0);
        }
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// Whether `path` names something that is there and is neither a file nor
/// a folder: a pipe, a device or a socket, which `Save` must not replace.
pub fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The first 40 characters of `token`, and `...` if there are more: a
/// message quoting a file's word stays short whatever the file holds.
fn clipped(token: &str) -> String {
    match token.char_indices().nth(40) {
        Some((at, _)) => format!("{}...", &token[..at]),
        None => token.to_string(),
    }
}

/// An existing file's permissions for the file that replaces it: on Unix
/// without set-user and set-group, as a write to the file clears them.
fn kept_permissions(permissions: std::fs::Permissions) -> std::fs::Permissions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(permissions.mode() & 0o1777)
    }
    #[cfg(not(unix))]
    {
        permissions
    }
}

/// A place in a file `Load` refuses, and why.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    pub line: usize,
    /// From 1, in characters.
    pub column: usize,
    pub why: String,
}

/// A number as `StrToFloat` and `Load` read it: an optional sign, digits
/// with a dot and an exponent as Rust reads an f64, or `inf` as `WriteLn`
/// and `Save` write infinity (or `Inf`, as the language spells it); never
/// a NaN. `Err` says what else the text is, after the text itself: not a
/// number, or digits too large for a Real, which a literal is refused for
/// too (they are not read as infinity, which is spelled `inf`).
pub fn real_number(token: &str) -> Result<f64, &'static str> {
    if matches!(token, "inf" | "+inf" | "-inf" | "Inf" | "+Inf" | "-Inf") {
        return Ok(if token.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    let plain = token
        .bytes()
        .all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c));
    match token.parse::<f64>() {
        Ok(x) if plain && x.is_infinite() => {
            Err("is too large in size for a Real, which is at most about 1.797e308")
        }
        Ok(x) if plain && !x.is_nan() => Ok(x),
        _ => Err("is not a number"),
    }
}

/// Reads what [`matrix_text`] writes (or any rows of numbers separated by
/// spaces or tabs): the shape and the numbers row by row.
pub fn parse_matrix(text: &str) -> Result<(usize, usize, Vec<f64>), Refusal> {
    let mut values = Vec::new();
    let mut cols: Option<usize> = None;
    let mut rows = 0;
    let mut blank: Option<usize> = None;
    // A byte-order mark, which some editors write first, is not a number.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let number_of_line = i + 1;
        let tokens: Vec<(usize, &str)> = tokens(line);
        if tokens.is_empty() {
            blank.get_or_insert(number_of_line);
            continue;
        }
        if let Some(at) = blank.filter(|_| rows > 0) {
            return Err(Refusal {
                line: at,
                column: 1,
                why: "a blank line between rows".to_string(),
            });
        }
        blank = None;
        for (k, &(column, token)) in tokens.iter().enumerate() {
            if cols.is_some_and(|n| k == n) {
                return Err(Refusal {
                    line: number_of_line,
                    column,
                    why: format!(
                        "row {} has more numbers than the {} of row 1",
                        rows + 1,
                        cols.unwrap_or_default()
                    ),
                });
            }
            match real_number(token) {
                Ok(x) => values.push(x),
                Err(what) => {
                    return Err(Refusal {
                        line: number_of_line,
                        column,
                        why: format!("`{}` {what}", clipped(token).escape_debug()),
                    });
                }
            }
        }
        match cols {
            Some(n) if tokens.len() < n => {
                return Err(Refusal {
                    line: number_of_line,
                    column: line.chars().count() + 1,
                    why: format!(
                        "row {} has {} number{}, row 1 has {n}",
                        rows + 1,
                        tokens.len(),
                        if tokens.len() == 1 { "" } else { "s" }
                    ),
                });
            }
            Some(_) => {}
            None => cols = Some(tokens.len()),
        }
        rows += 1;
    }
    match cols {
        Some(cols) => Ok((rows, cols, values)),
        None => Err(Refusal {
            line: 1,
            column: 1,
            why: "the file holds no numbers".to_string(),
        }),
    }
}

/// The words of a line, each with its column (from 1, in characters).
fn tokens(line: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    for (column, (at, c)) in line.char_indices().enumerate() {
        let space = c == ' ' || c == '\t';
        match (start, space) {
            (None, false) => start = Some((column + 1, at)),
            (Some((col, from)), true) => {
                found.push((col, &line[from..at]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some((col, from)) = start {
        found.push((col, &line[from..]));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_save_writes_load_reads_back_bit_for_bit() {
        let values = vec![
            0.1,
            -0.0,
            1e308,
            5e-324,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.0 / 3.0,
            -2.5e-17,
            123456789.0,
        ];
        let m = Array2::from_shape_vec((3, 3), values.clone()).unwrap();
        let text = matrix_text(&m);
        assert_eq!(text.lines().next(), Some("0.1 -0.0 1e308"));
        let (rows, cols, back) = parse_matrix(&text).unwrap();
        assert_eq!((rows, cols), (3, 3));
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
    }

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_nothing_when_it_fails() {
        let dir = std::env::temp_dir().join(format!("tapec-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.txt");
        write_whole(&path, "1 2\n").unwrap();
        write_whole(&path, "3\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "3\n");
        // The temporary file is gone once renamed.
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1);
        // A path whose folder is a file cannot be written: the old file stays.
        assert!(write_whole(&path.join("inside.txt"), "4\n").is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "3\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_write_goes_through_a_link_keeps_permissions_and_refuses_what_it_may_not_write() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tapec-files-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (real, link) = (dir.join("real.txt"), dir.join("link.txt"));
        std::fs::write(&real, "1\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_whole(&link, "2\n").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "2\n");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        // A link to a file that does not exist yet makes that file.
        let (missing, dangling) = (dir.join("made.txt"), dir.join("dangling.txt"));
        std::os::unix::fs::symlink(&missing, &dangling).unwrap();
        write_whole(&dangling, "3\n").unwrap();
        assert!(
            std::fs::symlink_metadata(&dangling)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&missing).unwrap(), "3\n");
        // A read-only file is never written, by root neither, which the
        // system would let write it.
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o444)).unwrap();
        let written = write_whole(&real, "4\n");
        assert_eq!(
            written.unwrap_err().kind(),
            std::io::ErrorKind::PermissionDenied
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "2\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn load_takes_tabs_and_crlf_and_refuses_what_is_not_a_matrix() {
        assert_eq!(
            parse_matrix("1\t2\r\n3  4\r\n\n").unwrap(),
            (2, 2, vec![1.0, 2.0, 3.0, 4.0])
        );
        let refused = |text: &str| parse_matrix(text).unwrap_err();
        assert_eq!(refused("1 2\n\n3 4\n").line, 2);
        assert_eq!(refused("").why, "the file holds no numbers");
        let extra = refused("1 2\n3 4 5\n");
        assert_eq!((extra.line, extra.column), (2, 5));
        let short = refused("1 2\n3\n");
        assert_eq!((short.line, short.column), (2, 2));
        let word = refused("1 x\n");
        assert_eq!(
            (word.line, word.column, word.why.as_str()),
            (1, 3, "`x` is not a number")
        );
        assert_eq!(refused("NaN\n").why, "`NaN` is not a number");
        // A byte-order mark first is skipped; a long word is quoted short.
        assert_eq!(
            parse_matrix("\u{feff}1 2\n").unwrap(),
            (1, 2, vec![1.0, 2.0])
        );
        let long = refused(&"7x".repeat(1000));
        assert_eq!(
            long.why,
            format!("`{}...` is not a number", "7x".repeat(20))
        );
    }
}
