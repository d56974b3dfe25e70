//! The walk page in a real browser: headless Chromium driven through
//! WebDriver (`chromedriver`), both from Debian's packages (`chromium`,
//! `chromium-driver`), which `.ci/run` installs.
//!
//! Without them this test says it was not run; under `CI=true` a missing
//! browser fails it, so in CI the page is always really driven.

mod clients;

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator, key::Key};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const DRIVER: &str = "/usr/bin/chromedriver";

/// The browser and its driver, or why they cannot be used here.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let found = |path: &str, name: &str| {
        let path = Path::new(path);
        if path.exists() {
            return Some(path.to_path_buf());
        }
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.exists())
        })
    };
    let chromium = found(CHROMIUM, "chromium")?;
    let driver = found(DRIVER, "chromedriver")?;
    Some((chromium, driver))
}

/// Ends the driver and every browser process it started when the test
/// ends, however it ends: they share a process group of their own, which
/// is signalled as a whole.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A folder of this test's own, emptied first and removed when the test
/// is done with it (Chromium's profile in it is some megabytes).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("tapec-walk-page-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// `tapec graph PROGRAM -o PAGE`, checked to succeed.
fn write_page(program: &Path, page: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_tapec"))
        .arg("graph")
        .arg(program)
        .arg("-o")
        .arg(page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tapec graph failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The blame each record holds after the walk, read from the golden walk
/// of the attention example (`tests/graph/attention.walk`): record number
/// to the lines of its blame.
fn golden_blame() -> Vec<(usize, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("tests/graph/attention.walk")).unwrap();
    let mut blame = Vec::new();
    for paragraph in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
        let mut lines = paragraph.lines();
        let head = lines.next().unwrap();
        let record: usize = head
            .split('#')
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no record number in `{head}`"));
        if head.contains("the tape's result") {
            blame.push((record, vec!["1".to_string()]));
            continue;
        }
        let held: Vec<String> = lines
            .take_while(|l| l.starts_with("    "))
            .map(|l| l.trim().to_string())
            .collect();
        blame.push((record, held));
    }
    blame
}

/// What every box shows: record number to its lines, from the heading of
/// its blame on (as the page draws them, blank lines dropped).
const BOXES: &str = r#"
    const out = {};
    const data = JSON.parse(document.getElementById("walk-data").textContent);
    document.querySelectorAll("g.record").forEach((g) => {
        const k = Number(g.dataset.record);
        const texts = [...g.querySelectorAll("text")].map((t) => t.textContent.trim());
        out[k] = texts.slice(data.records[k - 1].blameAt).filter((t) => t !== "");
    });
    return out;
"#;

/// The page's state as a test reads it: every box's blame lines, the
/// counter, the current record, and the share labels on the edges.
async fn read(client: &Client) -> Value {
    let boxes = client.execute(BOXES, vec![]).await.unwrap();
    let rest = client
        .execute(
            r#"
            const current = document.querySelector("g.record.current");
            return {
                counter: document.getElementById("counter").textContent,
                caption: document.getElementById("caption").textContent,
                current: current ? Number(current.dataset.record) : null,
                labels: [...document.querySelectorAll(".share-label")]
                    .map((l) => [Number(l.dataset.from), l.textContent]),
                slider: Number(document.getElementById("slider").value),
            };
            "#,
            vec![],
        )
        .await
        .unwrap();
    json!({ "boxes": boxes, "page": rest })
}

async fn click(client: &Client, css: &str) {
    client
        .find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn press(client: &Client, key: Key) {
    let body = client.find(Locator::Css("body")).await.unwrap();
    body.send_keys(&String::from(char::from(key)))
        .await
        .unwrap();
}

fn boxes(state: &Value) -> Vec<(usize, Vec<String>)> {
    let map = state["boxes"].as_object().unwrap();
    let mut out: Vec<(usize, Vec<String>)> = map
        .iter()
        .map(|(k, lines)| {
            let lines = lines
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap().to_string())
                .collect();
            (k.parse().unwrap(), lines)
        })
        .collect();
    out.sort();
    out
}

async fn connect(chromium: &Path, driver: &Path, profile: &Path) -> (Driver, Client) {
    let port = free_port();
    let child = Command::new(driver)
        .process_group(0)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver(child);
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".to_string(),
        json!({
            "binary": chromium.display().to_string(),
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--window-size=1400,1200",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(client) => return (driver, client),
            Err(e) if started.elapsed() < Duration::from_secs(30) => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("cannot start a Chromium session through chromedriver: {e}"),
        }
    }
}

#[test]
fn the_attention_walk_steps_in_a_real_browser() {
    let Some((chromium, driver)) = browser() else {
        clients::not_run(
            "the walk page's browser test",
            "Chromium and chromedriver are not installed",
            "apt-get install chromium chromium-driver, or run .ci/run",
        );
        return;
    };
    let dir = scratch("attention");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = dir.join("tape.html");
    write_page(&root.join("programs/attention.tape"), &page);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (_driver, client) = connect(&chromium, &driver, &dir.join("profile")).await;
        client
            .goto(&format!("file://{}", page.display()))
            .await
            .unwrap();

        // Step 0: no blame is shown, only "not yet", never a number.
        let start = read(&client).await;
        assert_eq!(start["page"]["counter"], "step 0 of 10");
        assert_eq!(start["page"]["current"], Value::Null);
        let first = boxes(&start);
        assert_eq!(first.len(), 10, "a box per record");
        for (k, lines) in &first {
            assert_eq!(lines, &vec!["blame: not yet".to_string()], "box #{k} at step 0");
        }

        // Forward through the walk, by button and by arrow key, keeping
        // what the page showed at each step.
        let mut seen = vec![start.clone()];
        for step in 1..=10 {
            if step % 2 == 0 {
                press(&client, Key::Right).await;
            } else {
                click(&client, "#forward").await;
            }
            let state = read(&client).await;
            assert_eq!(state["page"]["counter"], format!("step {step} of 10"));
            assert_eq!(state["page"]["slider"], step);
            seen.push(state);
        }

        // Step 1 visits the result and labels the edge to `o` with its
        // share; step 2 visits `o`, whose shares go to `p` and `vp`.
        assert_eq!(seen[1]["page"]["current"], 10);
        assert!(
            seen[1]["page"]["caption"]
                .as_str()
                .unwrap()
                .contains("starts at the tape's result"),
            "{}",
            seen[1]["page"]["caption"]
        );
        assert_eq!(seen[2]["page"]["current"], 9);
        let labels = seen[2]["page"]["labels"].as_array().unwrap();
        assert_eq!(labels.len(), 2, "{labels:?}");
        assert!(labels.contains(&json!([7, "share:\n[6 24]\n[6 24]"])), "{labels:?}");
        assert!(labels.contains(&json!([8, "share:\n[1.5 1.5]\n[0.5 0.5]"])), "{labels:?}");
        // Before its visit, `p` already shows the one share it gets.
        let p_at_2 = &boxes(&seen[2])[6];
        assert_eq!(p_at_2.1, vec!["blame:", "[6 24]", "[6 24]"]);
        let p_at_1 = &boxes(&seen[1])[6];
        assert_eq!(p_at_1.1, vec!["blame: not yet"]);

        // After the last step every box shows the golden file's blame.
        let last = boxes(&seen[10]);
        for (record, blame) in golden_blame() {
            let shown = &last[record - 1];
            assert_eq!(shown.0, record);
            assert_eq!(shown.1[0], "blame:", "box #{record}");
            assert_eq!(&shown.1[1..], &blame[..], "box #{record}");
        }

        // Going back one step undoes one record. From the end, back to
        // step 9: `k` is no longer the record being visited. Back to step 8:
        // `kt`'s visit is undone, and with it the share it handed `k`, so
        // `k`'s box is the only one that changes.
        press(&client, Key::Left).await;
        let back = read(&client).await;
        assert_eq!(back, seen[9]);
        assert_eq!(seen[10]["page"]["current"], 1);
        assert_eq!(seen[9]["page"]["current"], 2);
        click(&client, "#back").await;
        assert_eq!(read(&client).await, seen[8]);
        let changed: Vec<usize> = boxes(&seen[9])
            .iter()
            .zip(boxes(&seen[8]))
            .filter(|(a, b)| **a != *b)
            .map(|(a, _)| a.0)
            .collect();
        assert_eq!(changed, vec![1], "only `k`'s box differs between steps 8 and 9");
        assert_eq!(boxes(&seen[8])[0].1, vec!["blame: not yet"]);

        // The slider moves too: Home and End on it.
        let slider = client.find(Locator::Css("#slider")).await.unwrap();
        slider
            .send_keys(&String::from(char::from(Key::Home)))
            .await
            .unwrap();
        assert_eq!(read(&client).await, seen[0]);
        slider
            .send_keys(&String::from(char::from(Key::End)))
            .await
            .unwrap();
        assert_eq!(read(&client).await, seen[10]);

        // A click on `k`'s box shows its whole value and blame.
        click(&client, "g.record[data-record=\"1\"] rect").await;
        let panel = client
            .execute(
                r##"
                const cells = (id) => [...document.querySelectorAll("#" + id + " td")].map((c) => c.textContent);
                return {
                    hidden: document.getElementById("panel").hidden,
                    title: document.getElementById("panel-title").textContent,
                    value: cells("panel-value"),
                    blame: cells("panel-blame"),
                };
                "##,
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(panel["hidden"], false);
        assert_eq!(panel["title"], "#1 k (leaf)");
        assert_eq!(
            panel["value"],
            json!(["0.500000", "0.750000", "0.000000", "0.750000"])
        );
        assert_eq!(
            panel["blame"],
            json!(["0.000000", "-4.500000", "0.000000", "4.500000"])
        );
        client.close().await.unwrap();
    });
}

/// The walk page of `program` (its text), written in a scratch folder named
/// `name`, opened in the browser, and `test` run on it; or, with no
/// browser here, the note that `what` was not run.
fn on_page<F, Fut>(what: &str, name: &str, program: &str, test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let Some((chromium, driver)) = browser() else {
        clients::not_run(
            what,
            "Chromium and chromedriver are not installed",
            "apt-get install chromium chromium-driver, or run .ci/run",
        );
        return;
    };
    let dir = scratch(name);
    let path = dir.join(format!("{name}.tape"));
    std::fs::write(&path, program).unwrap();
    let page = dir.join("tape.html");
    write_page(&path, &page);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (_driver, client) = connect(&chromium, &driver, &dir.join("profile")).await;
        client
            .goto(&format!("file://{}", page.display()))
            .await
            .unwrap();
        test(client.clone()).await;
        client.close().await.unwrap();
    });
}

/// An input used twice holds a running sum of its shares until the last
/// one arrives.
#[test]
fn an_input_used_twice_shows_its_running_sum() {
    on_page(
        "the running-sum browser test",
        "twice",
        "x := 3;\ntape\n  y := x * x;\n  z := y + x;\nend;\nWriteLn(Blame(x));\n",
        |client| async move {
            // Records: #1 x (leaf), #2 y = x * x, #3 z = y + x.
            click(&client, "#forward").await;
            let after_z = boxes(&read(&client).await);
            assert_eq!(after_z[0].1, vec!["blame so far, 1 of 3 shares:", "1"]);
            click(&client, "#forward").await;
            let after_y = read(&client).await;
            assert_eq!(
                boxes(&after_y)[0].1,
                vec!["blame:", "7"],
                "1 from z, then 3 and 3 from y = x * x"
            );
            assert!(
                after_y["page"]["caption"]
                    .as_str()
                    .unwrap()
                    .contains("hands x 2 shares of that blame. That was the last of x's 3 shares"),
                "{}",
                after_y["page"]["caption"]
            );
        },
    );
}

/// A value too large to list (a 100×100 matrix) is shown in the panel by
/// its box's lines and why its elements are not listed; a small one beside
/// it is listed whole.
#[test]
fn a_large_value_is_summarised_in_the_panel() {
    on_page(
        "the large-value browser test",
        "large",
        "w := Fill(100, 100, 0.5);\nb := Fill(1, 2, 2);\ntape\n  s := Sum(w) + Sum(b);\nend;\n",
        |client| async move {
            let panel = r##"
                return {
                    cells: document.querySelectorAll("#panel-value td").length,
                    lines: [...document.querySelectorAll("#panel-value p")].map((p) => p.textContent),
                    title: document.getElementById("panel-title").textContent,
                };
            "##;
            click(&client, "#last").await;
            click(&client, "g.record[data-record=\"1\"] rect").await;
            let large = client.execute(panel, vec![]).await.unwrap();
            assert_eq!(large["title"], "#1 w (leaf)", "{large}");
            assert_eq!(large["cells"], 0, "{large}");
            let lines: Vec<&str> = large["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap())
                .collect();
            assert!(
                lines.last().is_some_and(|l| l.starts_with(
                    "100×100 elements: too many to list here (a page lists up to 4096 of one value)"
                )),
                "{large}"
            );
            assert!(lines.len() >= 2, "the box's own lines come first: {large}");
            click(&client, "g.record[data-record=\"3\"] rect").await;
            let small = client.execute(panel, vec![]).await.unwrap();
            assert_eq!(small["title"], "#3 b (leaf)", "{small}");
            assert_eq!(small["cells"], 2, "{small}");
        },
    );
}
