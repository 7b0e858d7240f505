//! `--data FILE` and `{{...}}` templates: requests filled per request from a data file's rows and the built-ins,
//! checked in the log of a real nginx (method, target, headers, body length).

mod common;

use common::{LoggedNginx, hakaru, write_in};

#[test]
fn ten_thousand_unique_rows_are_each_sent_exactly_once_then_the_run_ends() {
    let s = LoggedNginx::start();
    let dir = tempfile::tempdir().unwrap();
    let rows: String =
        std::iter::once("id,name\n".to_string()).chain((0..10_000).map(|i| format!("{i},n{i}\n"))).collect();
    let data = write_in(&dir, "rows.csv", &rows);
    let url = s.nginx.url("/u/{{id}}");
    // Bounded by time, but the rows run out long before.
    let out = hakaru(&["run", "-c", "8", "-t", "2", "-d", "60s", "--data", &data, "--data-order", "unique", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["requests"], 10_000);
    assert_eq!(out.doc()["interrupted"], false);
    assert!(out.doc()["settings"]["data"].as_str().unwrap().ends_with("rows.csv (unique)"));
    assert_eq!(common::schema_errors(out.doc()), Vec::<String>::new());
    let mut ids: Vec<u32> = s
        .wait_lines(10_000)
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().strip_prefix("/u/").unwrap().parse().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..10_000).collect::<Vec<u32>>(), "each row once");
}

#[test]
fn columns_fill_the_path_headers_and_body_and_sequential_rows_wrap() {
    let s = LoggedNginx::start();
    let dir = tempfile::tempdir().unwrap();
    let data = write_in(&dir, "rows.jsonl", "{\"id\": 1, \"name\": \"ab\"}\n{\"id\": 2, \"name\": \"cde f\"}\n");
    let url = s.nginx.url("/p/{{id}}?n={{name}}&s={{seq}}");
    let out = hakaru(&[
        "run",
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "5",
        "--data",
        &data,
        "-m",
        "POST",
        "-H",
        "X-Token: t-{{name}}",
        "-H",
        "Content-Type: text/plain",
        "-b",
        "{{name}}!",
        &url,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = s.wait_lines(5);
    let want = [
        "POST /p/1?n=ab&s=1 host=127.0.0.1:PORT counter=- token=t-ab type=text/plain length=3",
        "POST /p/2?n=cde%20f&s=2 host=127.0.0.1:PORT counter=- token=t-cde f type=text/plain length=6",
        "POST /p/1?n=ab&s=3 host=127.0.0.1:PORT counter=- token=t-ab type=text/plain length=3",
        "POST /p/2?n=cde%20f&s=4 host=127.0.0.1:PORT counter=- token=t-cde f type=text/plain length=6",
        "POST /p/1?n=ab&s=5 host=127.0.0.1:PORT counter=- token=t-ab type=text/plain length=3",
    ]
    .map(|l| l.replace("PORT", &s.nginx.port.to_string()));
    assert_eq!(lines, want);
    // The figures are labelled with the template.
    assert!(out.stdout.contains("POST /p/{{id}}?n={{name}}&s={{seq}}"), "{}", out.stdout);
    assert!(out.step()["generator"]["script_percent"].as_f64().is_some());
}

#[test]
fn builtins_work_without_a_data_file() {
    let s = LoggedNginx::start();
    let url = s.nginx.url("/b/{{uuid}}/{{rand 3 4}}/{{now_ms}}");
    let out = hakaru(&["run", "-c", "2", "-n", "20", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = s.wait_lines(20);
    let mut uuids = std::collections::HashSet::new();
    for l in &lines {
        let parts: Vec<&str> = l.split_whitespace().nth(1).unwrap().split('/').collect();
        assert_eq!(parts[2].len(), 36, "{l}");
        uuids.insert(parts[2].to_string());
        assert!(["3", "4"].contains(&parts[3]), "{l}");
        assert!(parts[4].parse::<u64>().unwrap() > 1_700_000_000_000, "{l}");
    }
    assert_eq!(uuids.len(), 20);
}

#[test]
fn bad_data_and_templates_are_refused_in_one_line_before_the_load() {
    let s = LoggedNginx::start();
    let dir = tempfile::tempdir().unwrap();
    let data = write_in(&dir, "rows.csv", "id,name\n1,a\n2\n");
    let good = write_in(&dir, "good.csv", "id\n1\n");
    let url = |p: &str| s.nginx.url(p);
    let cases: [(Vec<String>, &str); 4] = [
        (vec!["--data".into(), data.clone(), url("/{{id}}")], "rows.csv': line 3:"),
        (vec!["--data".into(), good.clone(), url("/{{nope}}")], "'{{nope}}' is neither a column of the data file (id)"),
        (vec!["--data".into(), good.clone(), url("/{{rand 5 1}}")], "{{rand LOW HIGH}}"),
        (vec!["--data".into(), good, url("/a"), url("/b")], "give one URL"),
    ];
    for (args, said) in cases {
        let mut all = vec!["run", "-n", "5"];
        all.extend(args.iter().map(String::as_str));
        let out = hakaru(&all);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(said), "{said}: {}", out.stderr);
    }
    assert!(std::fs::read_to_string(&s.log).unwrap_or_default().is_empty(), "nothing was sent");
}
