//! File endpoints against a real workspace on disk.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use cove_harness::{DaemonBuilder, DaemonProcess};
use cove_protocol::ErrorCode;
use cove_protocol::files::{
    CreateRequest, DeleteQuery, FileMode, ListQuery, ReadRequest, RewriteRequest, StrReplaceRequest,
};

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

fn create(path: &str, content: &str) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        content: content.into(),
        mode: None,
    }
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("coved") || n.ends_with(".tmp"))
        .collect()
}

#[tokio::test]
async fn create_makes_parents_and_refuses_to_overwrite() {
    let d = daemon().await;
    let c = &d.client;
    let made = c.create(&create("a/b/c.txt", "hello\n")).await.unwrap();
    assert_eq!((made.path.as_str(), made.bytes), ("a/b/c.txt", 6));
    assert_eq!(
        std::fs::read_to_string(d.path("a/b/c.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::metadata(d.path("a/b/c.txt"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
    let again = c.create(&create("a/b/c.txt", "other")).await.unwrap_err();
    assert_eq!(again.code(), Some(&ErrorCode::AlreadyExists));
    assert_eq!(
        std::fs::read_to_string(d.path("a/b/c.txt")).unwrap(),
        "hello\n"
    );
    let script = CreateRequest {
        path: "./bin//run.sh".into(),
        content: "#!/bin/sh\necho ran\n".into(),
        mode: Some(FileMode(0o755)),
    };
    assert_eq!(c.create(&script).await.unwrap().path, "bin/run.sh");
    assert_eq!(
        std::fs::metadata(d.path("bin/run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
    let onto_dir = c.create(&create("a/b", "x")).await.unwrap_err();
    assert_eq!(onto_dir.code(), Some(&ErrorCode::IsDirectory));
    let under_file = c.create(&create("a/b/c.txt/d", "x")).await.unwrap_err();
    assert_eq!(under_file.code(), Some(&ErrorCode::NotDirectory));
}

#[tokio::test]
async fn read_returns_text_and_line_ranges() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::write(d.path("lines.txt"), "one\ntwo\nthree\nfour\nfive").unwrap();
    let all = c.read(&ReadRequest::whole("lines.txt")).await.unwrap();
    assert_eq!(all.content, "one\ntwo\nthree\nfour\nfive");
    assert_eq!(all.total_lines, 5);
    let mid = c
        .read(&ReadRequest {
            path: "lines.txt".into(),
            start_line: Some(2),
            end_line: Some(3),
        })
        .await
        .unwrap();
    assert_eq!((mid.content.as_str(), mid.total_lines), ("two\nthree\n", 5));
    let tail = c
        .read(&ReadRequest {
            path: "lines.txt".into(),
            start_line: Some(4),
            end_line: Some(99),
        })
        .await
        .unwrap();
    assert_eq!(tail.content, "four\nfive");
    for (start, end) in [(Some(0), None), (Some(9), None), (Some(3), Some(2))] {
        let err = c
            .read(&ReadRequest {
                path: "lines.txt".into(),
                start_line: start,
                end_line: end,
            })
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            Some(&ErrorCode::InvalidRequest),
            "{start:?}..{end:?}"
        );
    }
    std::fs::write(d.path("empty.txt"), "").unwrap();
    let empty = c.read(&ReadRequest::whole("empty.txt")).await.unwrap();
    assert_eq!((empty.content.as_str(), empty.total_lines), ("", 0));
    std::fs::write(d.path("image.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    std::fs::write(d.path("latin1.txt"), b"caf\xe9\n").unwrap();
    for binary in ["image.png", "latin1.txt"] {
        let err = c.read(&ReadRequest::whole(binary)).await.unwrap_err();
        assert_eq!(err.code(), Some(&ErrorCode::NotText), "{binary}");
    }
    let missing = c.read(&ReadRequest::whole("nope.txt")).await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::NotFound));
    let dir = c.read(&ReadRequest::whole(".")).await.unwrap_err();
    assert_eq!(dir.code(), Some(&ErrorCode::IsDirectory));
}

#[tokio::test]
async fn rewrite_replaces_atomically_and_keeps_the_mode() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::write(d.path("tool.sh"), "old\n").unwrap();
    std::fs::set_permissions(d.path("tool.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let inode_before = std::fs::metadata(d.path("tool.sh")).unwrap().ino();
    let done = c
        .rewrite(&RewriteRequest {
            path: "tool.sh".into(),
            content: "new content\n".into(),
        })
        .await
        .unwrap();
    assert_eq!(done.bytes, 12);
    let meta = std::fs::metadata(d.path("tool.sh")).unwrap();
    assert_eq!(
        std::fs::read_to_string(d.path("tool.sh")).unwrap(),
        "new content\n"
    );
    assert_eq!(meta.permissions().mode() & 0o777, 0o750);
    assert_ne!(
        meta.ino(),
        inode_before,
        "replaced by rename, not rewritten in place"
    );
    assert!(leftovers(d.root()).is_empty(), "{:?}", leftovers(d.root()));
    let missing = c
        .rewrite(&RewriteRequest {
            path: "nope.txt".into(),
            content: "x".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::NotFound));
    // Through a link that stays inside, the target is replaced and the link kept.
    std::os::unix::fs::symlink("tool.sh", d.path("alias.sh")).unwrap();
    c.rewrite(&RewriteRequest {
        path: "alias.sh".into(),
        content: "via link\n".into(),
    })
    .await
    .unwrap();
    assert!(
        std::fs::symlink_metadata(d.path("alias.sh"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(d.path("tool.sh")).unwrap(),
        "via link\n"
    );
}

#[tokio::test]
async fn str_replace_needs_exactly_one_match() {
    let d = daemon().await;
    let c = &d.client;
    let text =
        "fn main() {\n    let x = 1;\n    let y = 2;\n    let x2 = 1;\n    println!(\"{x}\");\n}\n";
    std::fs::write(d.path("main.rs"), text).unwrap();
    let replace = |old: &str, new: &str| StrReplaceRequest {
        path: "main.rs".into(),
        old_str: old.into(),
        new_str: new.into(),
    };
    let none = c.str_replace(&replace("let z", "let w")).await.unwrap_err();
    assert_eq!(none.code(), Some(&ErrorCode::NoMatch));
    let many = c.str_replace(&replace("= 1;", "= 3;")).await.unwrap_err();
    assert_eq!(many.code(), Some(&ErrorCode::MultipleMatches));
    assert!(many.to_string().contains("lines 2, 4"), "{many}");
    assert_eq!(
        std::fs::read_to_string(d.path("main.rs")).unwrap(),
        text,
        "failed edits change nothing"
    );
    let done = c
        .str_replace(&replace(
            "    let y = 2;\n",
            "    let y = 20;\n    let z = 30;\n",
        ))
        .await
        .unwrap();
    assert_eq!(done.replaced_at_line, 3);
    assert_eq!(done.snippet_start_line, 1);
    assert!(
        done.snippet
            .contains("let y = 20;\n    let z = 30;\n    let x2 = 1;"),
        "{}",
        done.snippet
    );
    let now = std::fs::read_to_string(d.path("main.rs")).unwrap();
    assert_eq!(
        now,
        text.replace("    let y = 2;\n", "    let y = 20;\n    let z = 30;\n")
    );
    let empty = c.str_replace(&replace("", "x")).await.unwrap_err();
    assert_eq!(empty.code(), Some(&ErrorCode::InvalidRequest));
}

#[tokio::test]
async fn list_walks_to_the_asked_depth_without_following_links() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::create_dir_all(d.path("src/deep/deeper")).unwrap();
    std::fs::write(d.path("src/lib.rs"), "x").unwrap();
    std::fs::write(d.path("src/deep/deeper/leaf.txt"), "leaf").unwrap();
    std::os::unix::fs::symlink("src", d.path("link")).unwrap();
    let top = c.list(&ListQuery::default()).await.unwrap();
    let names: Vec<_> = top.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(names, ["link", "src"]);
    assert!(top.entries[0].is_symlink && !top.entries[0].is_dir);
    assert!(top.entries[1].is_dir && top.entries[1].modified.is_some());
    let deep = c
        .list(&ListQuery {
            path: ".".into(),
            depth: 4,
        })
        .await
        .unwrap();
    let names: Vec<_> = deep.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        names,
        [
            "link",
            "src",
            "src/deep",
            "src/deep/deeper",
            "src/deep/deeper/leaf.txt",
            "src/lib.rs"
        ]
    );
    let leaf = deep
        .entries
        .iter()
        .find(|e| e.path.ends_with("leaf.txt"))
        .unwrap();
    assert_eq!(leaf.size, 4);
    let sub = c
        .list(&ListQuery {
            path: "src/deep".into(),
            depth: 1,
        })
        .await
        .unwrap();
    assert_eq!(sub.entries.len(), 1);
    assert_eq!(sub.entries[0].path, "src/deep/deeper");
    let through_link = c
        .list(&ListQuery {
            path: "link".into(),
            depth: 1,
        })
        .await
        .unwrap();
    assert_eq!(
        through_link.entries.len(),
        2,
        "a link inside the workspace can be listed"
    );
    let file = c
        .list(&ListQuery {
            path: "src/lib.rs".into(),
            depth: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(file.code(), Some(&ErrorCode::NotDirectory));
    let deep_err = c
        .list(&ListQuery {
            path: ".".into(),
            depth: 99,
        })
        .await
        .unwrap_err();
    assert_eq!(deep_err.code(), Some(&ErrorCode::InvalidRequest));
}

#[tokio::test]
async fn delete_removes_files_links_and_directories_on_request() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::create_dir_all(d.path("dir/sub")).unwrap();
    std::fs::write(d.path("dir/sub/f.txt"), "x").unwrap();
    std::fs::write(d.path("file.txt"), "x").unwrap();
    std::os::unix::fs::symlink("file.txt", d.path("link")).unwrap();
    let del = |path: &str, recursive: bool| DeleteQuery {
        path: path.into(),
        recursive,
    };
    c.delete(&del("link", false)).await.unwrap();
    assert!(
        d.path("file.txt").exists(),
        "deleting a link leaves its target"
    );
    assert_eq!(
        c.delete(&del("file.txt", false)).await.unwrap().path,
        "file.txt"
    );
    assert!(!d.path("file.txt").exists());
    let full = c.delete(&del("dir", false)).await.unwrap_err();
    assert_eq!(full.code(), Some(&ErrorCode::DirectoryNotEmpty));
    assert!(d.path("dir/sub/f.txt").exists());
    c.delete(&del("dir", true)).await.unwrap();
    assert!(!d.path("dir").exists());
    let missing = c.delete(&del("dir", true)).await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::NotFound));
    for root in [".", "", "./"] {
        let err = c.delete(&del(root, true)).await.unwrap_err();
        assert_eq!(err.code(), Some(&ErrorCode::InvalidPath), "{root:?}");
    }
    assert!(d.root().exists());
}

#[tokio::test]
async fn upload_and_download_stream_raw_bytes() {
    let d = daemon().await;
    let c = &d.client;
    let data: Vec<u8> = (0..5 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let put = c.upload("blobs/data.bin", data.clone()).await.unwrap();
    assert_eq!(
        (put.path.as_str(), put.bytes),
        ("blobs/data.bin", data.len() as u64)
    );
    assert_eq!(std::fs::read(d.path("blobs/data.bin")).unwrap(), data);
    let got = c.download("blobs/data.bin").await.unwrap();
    assert_eq!(got.as_ref(), data.as_slice());
    // Replacing an existing file keeps its mode.
    std::fs::set_permissions(
        d.path("blobs/data.bin"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    c.upload("blobs/data.bin", b"small".to_vec()).await.unwrap();
    let meta = std::fs::metadata(d.path("blobs/data.bin")).unwrap();
    assert_eq!((meta.len(), meta.permissions().mode() & 0o777), (5, 0o600));
    assert!(leftovers(&d.path("blobs")).is_empty());
    let missing = c.download("nope.bin").await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::NotFound));
    let dir = c.download("blobs").await.unwrap_err();
    assert_eq!(dir.code(), Some(&ErrorCode::IsDirectory));
}

#[tokio::test]
async fn oversized_uploads_are_refused_and_lose_nothing() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--max-upload-bytes")
        .arg("1048576")
        .arg("--max-request-bytes")
        .arg("65536")
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    std::fs::write(d.path("keep.bin"), b"original").unwrap();
    // Declared too large: refused before a byte is stored.
    let err = c
        .upload("keep.bin", vec![7u8; 2 * 1024 * 1024])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::PayloadTooLarge));
    // Streamed without a length: refused once the cap is crossed.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..40).map(|_| Ok(vec![9u8; 64 * 1024])).collect();
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let err = c.upload("keep.bin", body).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::PayloadTooLarge));
    assert_eq!(std::fs::read(d.path("keep.bin")).unwrap(), b"original");
    assert!(leftovers(d.root()).is_empty(), "{:?}", leftovers(d.root()));
    // JSON bodies have their own cap.
    let err = c
        .create(&create("big.txt", &"x".repeat(100_000)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::PayloadTooLarge));
    assert!(!d.path("big.txt").exists());
}
