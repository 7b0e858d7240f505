//! The drnbench pattern tools, called in-process: terms extracted from Groonga select results (and other JSON),
//! pattern files generated from terms (checked against golden files, sized for a cache hit rate), and every
//! generated file read back by hakaru's own pattern reader.
//!
//! Set HAKARU_UPDATE_GOLDEN=1 to rewrite the golden files in tests/golden/ after a deliberate format change.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::common;

use common::run_hakaru_measuring_rss;
use hakaru::patterns;
use hakaru::patterns::tools::{ExtractOptions, GenerateOptions, Generated, extract, generate, parse_hit_rate};

/// What `curl 'http://node1:10041/d/select?table=Pages&output_columns=_id,title,n_likes&drilldown=region'`
/// answers: the header, the result set (hits, columns, five records), then a drilldown that must be ignored.
const SELECT_RESULT: &str = r#"[
  [0, 1412326645.19, 0.0012],
  [
    [
      [1500000],
      [["_id", "UInt32"], ["title", "ShortText"], ["n_likes", "Int32"]],
      [1, "Tokyo", 120],
      [2, "京都", 85],
      [3, "Osaka Castle", 40],
      [4, "Nara & Deer", 7],
      [5, "Hokkaido", 0]
    ],
    [
      [3],
      [["_key", "ShortText"], ["_nsubrecs", "Int32"]],
      ["Kanto", 2],
      ["Kansai", 3]
    ]
  ]
]
"#;

fn opts(column: usize) -> ExtractOptions {
    ExtractOptions { column, ..ExtractOptions::default() }
}

/// Runs extract on `input` as stdin; returns the lines printed, checking the count returned matches.
fn extract_stdin(opts: &ExtractOptions, input: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let n = extract(opts, &mut input.as_bytes(), &mut out).map_err(|e| e.to_string())?;
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<String> = text.lines().map(String::from).collect();
    assert_eq!(n, lines.len(), "count returned vs lines printed: {text:?}");
    Ok(lines)
}

fn write_temp(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
    path
}

#[test]
fn extract_prints_column_0_of_every_record_with_numbers_as_their_json_text() {
    assert_eq!(extract_stdin(&opts(0), SELECT_RESULT).unwrap(), ["1", "2", "3", "4", "5"]);
    assert_eq!(extract_stdin(&opts(2), SELECT_RESULT).unwrap(), ["120", "85", "40", "7", "0"]);
}

#[test]
fn extract_prints_strings_as_they_are_and_ignores_drilldowns() {
    assert_eq!(
        extract_stdin(&opts(1), SELECT_RESULT).unwrap(),
        ["Tokyo", "京都", "Osaka Castle", "Nara & Deer", "Hokkaido"]
    );
}

#[test]
fn extract_with_escape_percent_encodes_utf8_spaces_and_ampersands() {
    let o = ExtractOptions { column: 1, escape: true, ..ExtractOptions::default() };
    assert_eq!(
        extract_stdin(&o, SELECT_RESULT).unwrap(),
        ["Tokyo", "%E4%BA%AC%E9%83%BD", "Osaka%20Castle", "Nara%20%26%20Deer", "Hokkaido"]
    );
}

#[test]
fn extract_reads_concatenated_documents_bare_result_sets_and_several_files_without_deduplicating() {
    let bare = r#"[[2], [["title", "ShortText"]], ["Tokyo"], ["Kobe"]]"#;
    let stream = format!("{SELECT_RESULT}{bare}\n{bare}");
    let lines = extract_stdin(&opts(0), &stream).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lines.len(), 5 + 2 + 2);
    assert_eq!(&lines[5..], ["Tokyo", "Kobe", "Tokyo", "Kobe"]);

    let dir = tempfile::tempdir().unwrap();
    let a = write_temp(dir.path(), "a.json", SELECT_RESULT);
    let b = write_temp(dir.path(), "b.json", bare);
    let o = ExtractOptions { column: 0, files: vec![a, b], ..ExtractOptions::default() };
    let mut out = Vec::new();
    let n = extract(&o, &mut &b""[..], &mut out).unwrap();
    assert_eq!(n, 7);
    assert_eq!(String::from_utf8(out).unwrap(), "1\n2\n3\n4\n5\nTokyo\nKobe\n");
}

#[test]
fn extract_reads_groonga_command_version_3_results() {
    let v3 = r#"{"header": {"return_code": 0, "start_time": 1.0, "elapsed_time": 0.1},
                 "body": {"n_hits": 2, "columns": [{"name": "_id", "type": "UInt32"}, {"name": "title", "type": "ShortText"}],
                          "records": [[1, "Tokyo"], [2, "京都"]]}}"#;
    assert_eq!(extract_stdin(&opts(1), v3).unwrap(), ["Tokyo", "京都"]);
}

#[test]
fn a_column_beyond_the_records_names_the_columns_there_are() {
    let err = extract_stdin(&opts(5), SELECT_RESULT).unwrap_err();
    for needle in ["stdin:1:1:", "--column 5", "3 columns", "0 _id, 1 title, 2 n_likes", "use --column 0 to 2"] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn malformed_json_names_the_file_line_and_column_and_the_fix() {
    // Line 3 lacks the comma between two records.
    let broken = "[[0, 1.0, 0.1],\n [[[2], [[\"title\", \"ShortText\"]],\n   [\"Tokyo\"] [\"Kyoto\"]]]]\n";
    let err = extract_stdin(&opts(0), broken).unwrap_err();
    assert!(err.starts_with("stdin:3:14: not valid JSON: "), "{err}");
    assert!(err.contains("Groonga select"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let path = write_temp(dir.path(), "select.json", "[[0, 1.0, 0.1],\n  [[[1], [], [\"a\"]]]\n");
    let o = ExtractOptions { files: vec![path.clone()], ..ExtractOptions::default() };
    let err = extract(&o, &mut &b""[..], &mut Vec::new()).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:3:1: not valid JSON: EOF", path.display())), "{err}");

    let err = extract_stdin(&opts(0), "  \n").unwrap_err();
    assert!(err.starts_with("stdin: no JSON in it;"), "{err}");
    let missing = ExtractOptions { files: vec![dir.path().join("nope.json")], ..ExtractOptions::default() };
    let err = extract(&missing, &mut &b""[..], &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("nope.json: cannot read"), "{err}");
}

#[test]
fn other_json_and_groonga_errors_are_refused_with_the_fix() {
    let err = extract_stdin(&opts(0), r#"{"hits": ["a"]}"#).unwrap_err();
    assert!(err.contains("not a Groonga select result") && err.contains("--pointer"), "{err}");
    let err = extract_stdin(&opts(0), r#"[[-22, 1.0, 0.1, "invalid table name: <Pagez>"]]"#).unwrap_err();
    assert!(err.contains("error -22 (invalid table name: <Pagez>)"), "{err}");
}

fn pointer(p: &str, column: usize) -> ExtractOptions {
    ExtractOptions { column, pointer: Some(p.into()), ..ExtractOptions::default() }
}

#[test]
fn extract_with_a_pointer_takes_the_elements_of_any_json_array() {
    let doc = r#"{"count": 3, "hits": ["Tokyo", "京都", 42]}"#;
    assert_eq!(extract_stdin(&pointer("/hits", 0), doc).unwrap(), ["Tokyo", "京都", "42"]);
    let rows = r#"{"result": {"rows": [["Tokyo", 120], ["Kyoto", 85]]}}"#;
    assert_eq!(extract_stdin(&pointer("/result/rows", 1), rows).unwrap(), ["120", "85"]);
    let droonga = r#"{"hits": [{"title": "Tokyo"}, {"title": "Nara & Deer"}]}"#;
    let o = ExtractOptions { escape: true, ..pointer("/hits/*/title", 0) };
    assert_eq!(extract_stdin(&o, droonga).unwrap(), ["Tokyo", "Nara%20%26%20Deer"]);
}

#[test]
fn a_pointer_that_misses_says_what_is_there() {
    let droonga = r#"{"hits": [{"title": "Tokyo"}]}"#;
    let err = extract_stdin(&pointer("/hitz", 0), droonga).unwrap_err();
    assert!(err.contains("no key 'hitz'") && err.contains("keys there are: hits"), "{err}");
    let err = extract_stdin(&pointer("/hits", 0), droonga).unwrap_err();
    assert!(err.contains("is an object") && err.contains("/hits/*/title"), "{err}");
    let err = extract_stdin(&pointer("/hits/0/title", 0), droonga).unwrap_err();
    assert!(err.contains("is a string, not an array"), "{err}");
    let err = extract_stdin(&pointer("hits", 0), droonga).unwrap_err();
    assert!(err.contains("write --pointer /hits"), "{err}");
    let err = extract_stdin(&pointer("/rows", 2), r#"{"rows": [["a", 1]]}"#).unwrap_err();
    assert!(err.contains("has 2 items; use --column 0 to 1"), "{err}");
}

const TEMPLATE: &str = "/d/select?table=Pages&limit=10&query={term}";

/// Generates from `terms` given on stdin.
fn generate_from(opts: GenerateOptions, terms: &str) -> Result<Generated, String> {
    generate(&opts, &mut terms.as_bytes()).map_err(|e| e.to_string())
}

fn base() -> GenerateOptions {
    GenerateOptions { template: TEMPLATE.into(), terms: PathBuf::from("-"), ..GenerateOptions::default() }
}

/// Compares with tests/golden/NAME, or rewrites it when HAKARU_UPDATE_GOLDEN is set.
fn assert_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("HAKARU_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with HAKARU_UPDATE_GOLDEN=1", path.display()));
    assert_eq!(actual, expected, "differs from {}", path.display());
}

/// Reads a generated file back with hakaru's pattern reader.
fn load(g: &Generated) -> patterns::PatternSet {
    patterns::parse(&g.json).unwrap_or_else(|e| panic!("{e}\n{}", g.json))
}

const TERMS: &str = "Tokyo\n京都\n\n  Osaka Castle  \r\nNara & Deer\nTokyo\n";

#[test]
fn generate_writes_one_drnbench_group_of_every_term_in_order() {
    let g = generate_from(base(), TERMS).unwrap();
    assert_golden("patterns_single.json", &g.json);
    assert_eq!(g.unique_requests, 4);
    assert!(g.warnings.is_empty(), "{:?}", g.warnings);

    let set = load(&g);
    assert_eq!(set.groups.len(), 1);
    let group = &set.groups[0];
    assert_eq!((group.name.as_str(), group.frequency), ("with-query", 1.0));
    let paths: Vec<&str> = group.patterns.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/d/select?table=Pages&limit=10&query=Tokyo",
            "/d/select?table=Pages&limit=10&query=%E4%BA%AC%E9%83%BD",
            "/d/select?table=Pages&limit=10&query=Osaka%20Castle",
            "/d/select?table=Pages&limit=10&query=Nara%20%26%20Deer",
            "/d/select?table=Pages&limit=10&query=Tokyo",
        ]
    );
    assert!(group.patterns.iter().all(|p| p.fields().method.as_deref() == Some("GET") && p.fields().host.is_none()));
}

#[test]
fn generate_with_hosts_writes_one_group_per_host_sharing_the_load() {
    let o = GenerateOptions { hosts: vec!["node1".into(), "node2:10041".into()], ..base() };
    let g = generate_from(o, TERMS).unwrap();
    assert_golden("patterns_hosts.json", &g.json);

    let set = load(&g);
    let names: Vec<&str> = set.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["with-query-node1", "with-query-node2:10041"]);
    for (group, (host, port)) in set.groups.iter().zip([("node1", None), ("node2", Some(10041))]) {
        assert_eq!(group.frequency, 0.5);
        assert_eq!(group.patterns.len(), 5);
        assert!(group.patterns.iter().all(|p| p.fields().host.as_deref() == Some(host) && p.fields().port == port));
    }
}

#[test]
fn generate_without_escaping_substitutes_terms_verbatim_and_warns_about_spaces() {
    let o = GenerateOptions { escape: false, method: "post".into(), ..base() };
    let g = generate_from(o, "Tokyo\n京都\nOsaka Castle\n").unwrap();
    let set = load(&g);
    assert_eq!(set.groups[0].patterns[1].path, "/d/select?table=Pages&limit=10&query=京都");
    assert_eq!(set.groups[0].patterns[0].fields().method.as_deref(), Some("POST"));
    assert_eq!(g.warnings.len(), 1, "{:?}", g.warnings);
    assert!(g.warnings[0].contains("1 of the terms") && g.warnings[0].contains("Osaka Castle"));
}

#[test]
fn generate_warns_when_terms_were_escaped_already() {
    let g = generate_from(base(), "%E4%BA%AC%E9%83%BD\nTokyo\n").unwrap();
    assert!(g.warnings.iter().any(|w| w.contains("percent-encoded already")), "{:?}", g.warnings);
    assert_eq!(
        load(&g).groups[0].patterns[0].path,
        "/d/select?table=Pages&limit=10&query=%25E4%25BA%25AC%25E9%2583%25BD"
    );
}

fn numbered_terms(n: usize) -> String {
    (1..=n).map(|i| format!("term{i}\n")).collect()
}

fn hit_rate(rate: &str) -> GenerateOptions {
    GenerateOptions { hit_rate: Some(parse_hit_rate(rate).unwrap()), cache_size: 100, ..base() }
}

#[test]
fn a_50_percent_hit_rate_with_a_cache_of_100_takes_200_distinct_terms() {
    // 300 distinct terms, each twice: the first 200 distinct ones are used, once each.
    let terms = numbered_terms(300).repeat(2);
    let g = generate_from(hit_rate("0.5"), &terms).unwrap();
    assert_eq!(g.unique_requests, 200);
    assert!(g.warnings.is_empty(), "{:?}", g.warnings);
    let set = load(&g);
    let patterns = &set.groups[0].patterns;
    assert_eq!(patterns.len(), 200);
    assert_eq!(patterns[0].path, TEMPLATE.replace("{term}", "term1"));
    assert_eq!(patterns[199].path, TEMPLATE.replace("{term}", "term200"));

    let g = generate_from(hit_rate("25%"), &terms).unwrap();
    assert_eq!((g.unique_requests, load(&g).groups[0].patterns.len()), (300, 300));
    assert!(g.warnings[0].contains("300 distinct terms") && g.warnings[0].contains("400 are needed"));
}

#[test]
fn too_few_terms_for_the_hit_rate_keeps_them_all_and_says_what_rate_they_give() {
    let o = GenerateOptions { hosts: vec!["a".into(), "b".into(), "c".into()], ..hit_rate("50%") };
    let g = generate_from(o, &numbered_terms(150)).unwrap();
    assert_eq!(g.unique_requests, 150);
    assert_eq!(g.warnings.len(), 1, "{:?}", g.warnings);
    let w = &g.warnings[0];
    for needle in ["--hit-rate 50%", "150 distinct terms", "200 are needed", "about 67%"] {
        assert!(w.contains(needle), "{needle:?} not in {w}");
    }
    let set = load(&g);
    assert_eq!(set.groups.len(), 3);
    assert!(set.groups.iter().all(|g| g.patterns.len() == 150));
    assert!((set.groups.iter().map(|g| g.frequency).sum::<f64>() - 1.0).abs() < 1e-9);

    let g = generate_from(hit_rate("0.5"), &numbered_terms(50)).unwrap();
    assert!(g.warnings[0].contains("about 100%"), "{:?}", g.warnings);
}

#[test]
fn generate_reads_terms_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_temp(dir.path(), "terms.txt", TERMS);
    let o = GenerateOptions { terms: path, ..base() };
    let g = generate(&o, &mut &b""[..]).unwrap();
    assert_eq!(load(&g).groups[0].patterns.len(), 5);

    let bad = write_temp(dir.path(), "latin1.txt", "");
    std::fs::write(&bad, b"Tokyo\nKy\xF4to\n").unwrap();
    let err = generate(&GenerateOptions { terms: bad, ..base() }, &mut &b""[..]).unwrap_err().to_string();
    assert!(err.contains("latin1.txt:2:3: not UTF-8"), "{err}");
}

#[test]
fn bad_generate_input_is_refused_with_the_flag_and_the_fix() {
    let cases: &[(GenerateOptions, &str, &[&str])] = &[
        (
            GenerateOptions { template: "/d/select?table=Pages&query=".into(), ..base() },
            "Tokyo\n",
            &["--template", "no {term}", "query={term}"],
        ),
        (
            GenerateOptions { template: "d/select?query={term}".into(), ..base() },
            "Tokyo\n",
            &["--template", "start it with /"],
        ),
        (base(), "\n  \n", &["--terms stdin", "no terms"]),
        (GenerateOptions { hosts: vec!["a".into(), "a".into()], ..base() }, "Tokyo\n", &["--hosts", "twice"]),
        (GenerateOptions { hit_rate: Some(1.5), ..base() }, "Tokyo\n", &["--hit-rate", "at most 1"]),
        (GenerateOptions { cache_size: 0, ..hit_rate("0.5") }, "Tokyo\n", &["--cache-size 0"]),
        (GenerateOptions { method: "GE T".into(), ..base() }, "Tokyo\n", &["--method"]),
    ];
    for (o, terms, needles) in cases {
        let err = generate_from(o.clone(), terms).unwrap_err();
        assert_eq!(err.lines().count(), 1, "{err}");
        for n in *needles {
            assert!(err.contains(n), "{n:?} not in {err}");
        }
    }
}

/// Writes a Groonga select result of `records` records (about 100 bytes each) with a drilldown after them, as
/// `curl .../d/select?output_columns=_id,title,n_likes,summary&drilldown=region` would save it.
fn write_large_select_result(path: &Path, records: usize) {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    write!(
        w,
        "[[0,1412326645.19,0.52],\n[[[{records}],\
         [[\"_id\",\"UInt32\"],[\"title\",\"ShortText\"],[\"n_likes\",\"Int32\"],[\"summary\",\"Text\"]]"
    )
    .unwrap();
    for i in 1..=records {
        write!(
            w,
            ",\n[{i},\"Page {i}: a title about Kyoto\",{},\"a summary of the page, long enough to matter {i}\"]",
            i % 997
        )
        .unwrap();
    }
    w.write_all(b"],\n[[2],[[\"_key\",\"ShortText\"],[\"_nsubrecs\",\"Int32\"]],[\"Kanto\",1],[\"Kansai\",2]]]]\n")
        .unwrap();
    w.flush().unwrap();
}

#[test]
fn extract_streams_a_70_mb_select_result_in_bounded_memory() {
    const RECORDS: usize = 700_000;
    const LIMIT_KIB: u64 = 64 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("select.json");
    write_large_select_result(&input, RECORDS);
    let size = std::fs::metadata(&input).unwrap().len();
    assert!(size > 60_000_000, "the input is only {size} bytes");

    let (stdout, stderr) = (dir.path().join("terms.txt"), dir.path().join("stderr.txt"));
    let args = ["patterns".as_ref(), "extract".as_ref(), "--column".as_ref(), "1".as_ref(), input.as_os_str()];
    let (ok, peak_kib) = run_hakaru_measuring_rss(&args, &stdout, &stderr);
    assert!(ok, "hakaru failed: {}", std::fs::read_to_string(&stderr).unwrap());

    let terms = std::fs::read_to_string(&stdout).unwrap();
    assert_eq!(terms.lines().count(), RECORDS);
    assert_eq!(terms.lines().next(), Some("Page 1: a title about Kyoto"));
    assert_eq!(terms.lines().last(), Some("Page 700000: a title about Kyoto"));
    assert!(
        peak_kib < LIMIT_KIB,
        "peak RSS {peak_kib} KiB on a {size}-byte input; extract must hold one record at a time, not the file"
    );
}

#[test]
fn extract_with_a_pointer_streams_the_array_its_star_walks() {
    const HITS: usize = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("hits.json");
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&input).unwrap());
    write!(w, "{{\"count\": {HITS}, \"hits\": [").unwrap();
    for i in 0..HITS {
        let sep = if i == 0 { "" } else { ",\n" };
        write!(w, "{sep}{{\"title\": \"Title {i}\", \"n\": {i}, \"tags\": [\"a\", \"b{i}\"]}}").unwrap();
    }
    w.write_all(b"], \"took\": 3}\n").unwrap();
    w.flush().unwrap();
    drop(w);

    let (stdout, stderr) = (dir.path().join("terms.txt"), dir.path().join("stderr.txt"));
    let args =
        ["patterns".as_ref(), "extract".as_ref(), "--pointer".as_ref(), "/hits/*/title".as_ref(), input.as_os_str()];
    let (ok, peak_kib) = run_hakaru_measuring_rss(&args, &stdout, &stderr);
    assert!(ok, "hakaru failed: {}", std::fs::read_to_string(&stderr).unwrap());
    let terms = std::fs::read_to_string(&stdout).unwrap();
    assert_eq!(terms.lines().count(), HITS);
    assert_eq!(terms.lines().last(), Some("Title 199999"));
    assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB; a pointer walk must hold one element at a time");
}

#[test]
fn version_3_results_are_read_whatever_the_order_of_their_keys() {
    // Header after the body: the body waits for the header's verdict.
    let late_header = r#"{"body": {"records": [[1, "Tokyo"]]}, "header": {"return_code": 0}}"#;
    assert_eq!(extract_stdin(&opts(1), late_header).unwrap(), ["Tokyo"]);
    let failed =
        r#"{"body": {"records": [[1, "Tokyo"]]}, "header": {"return_code": -63, "error": {"message": "boom"}}}"#;
    let err = extract_stdin(&opts(1), failed).unwrap_err();
    assert!(err.starts_with("stdin:1:1: Groonga returned error -63 (boom)"), "{err}");
    // Columns after the records still name the columns when --column is beyond them.
    let late_columns = r#"{"body": {"records": [[1, "Tokyo"]], "columns": [{"name": "_id"}, {"name": "title"}]}}"#;
    let err = extract_stdin(&opts(2), late_columns).unwrap_err();
    assert!(err.contains("2 columns: 0 _id, 1 title; use --column 0 to 1"), "{err}");
    let err = extract_stdin(&opts(0), r#"{"header": {"return_code": 0}, "body": {"records": 5}}"#).unwrap_err();
    assert!(err.contains("not a Groonga select result"), "{err}");
}

#[test]
fn shape_errors_are_reported_where_their_document_starts() {
    let bare = r#"[[1], [["title", "ShortText"]], ["Tokyo"]]"#;
    let stream = format!("{bare}\n  {bare}\n\n   [[1], [[\"title\", \"ShortText\"]], 5]");
    let err = extract_stdin(&opts(0), &stream).unwrap_err();
    assert!(err.starts_with("stdin:4:4: record 1 is a number, not an array"), "{err}");
    let err = extract_stdin(&opts(0), "\u{feff}[[0, 1.0, 0.1], [[[1]]]]").unwrap_err();
    assert!(err.starts_with("stdin:1:1: a result set without its column list"), "{err}");
}

#[test]
fn a_pointer_walks_indexes_and_escaped_keys() {
    let doc = r#"{"a/b": {"~x": [["p", "q"], ["r", "s"]]}, "rows": [[1, 2], [3, 4], [5, 6]]}"#;
    assert_eq!(extract_stdin(&pointer("/a~1b/~0x", 1), doc).unwrap(), ["q", "s"]);
    assert_eq!(extract_stdin(&pointer("/rows/1", 0), doc).unwrap(), ["3", "4"]);
    let err = extract_stdin(&pointer("/rows/7", 0), doc).unwrap_err();
    assert!(err.contains("'/rows' is an array of 3 elements; use an index below 3 or *"), "{err}");
    let many: String = (0..30).map(|i| format!("\"k{i:02}\": {i}, ")).collect();
    let err = extract_stdin(&pointer("/nope", 0), &format!("{{{many}\"z\": 1}}")).unwrap_err();
    assert!(err.contains("the keys there are: k00, k01, k02, k03, k04, k05, k06, k07, k08, k09"), "{err}");
    assert!(!err.contains("k10"), "{err}");
}
