//! `pattern follow`: the application's follower, from the rules it recorded, run by the
//! command.

use pattern_core::follow::Follower;
use pattern_core::{store::Store, Document};
use serde::{Deserialize, Serialize};

use crate::support::{show, Db};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    reviews: i64,
    rating_sum: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "reviews",
    computed(parent = Film, key = film_id, count = reviews, sum(rating = rating_sum))
)]
struct Review {
    #[serde(rename = "_id")]
    id: i64,
    film_id: i64,
    rating: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_applies_what_other_programs_wrote_with_the_recorded_rules() {
    let db = Db::new("cli_follow").await;
    // Before any follower ran: nothing to follow, a usage error.
    let out = db.run(&["follow", "--once"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    Film {
        id: 1,
        reviews: 0,
        rating_sum: 0,
    }
    .insert(&db.store)
    .await
    .unwrap();
    // The application's follower runs once: it records what it keeps.
    let app = Follower::new(db.store.clone(), "films").follow::<Review>();
    app.catch_up().await.unwrap();
    // Another program inserts two reviews without touching the film.
    for (id, rating) in [(10_i64, 4_i64), (11, 5)] {
        let review = bson::doc! {"_id": id, "film_id": 1_i64, "rating": rating};
        db.store.insert_one("reviews", review).await.unwrap();
    }
    let out = db.run(&["--json", "follow", "--once"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A status a line while it runs, then the report: the last JSON document.
    let all = serde_json::Deserializer::from_str(&stdout).into_iter::<serde_json::Value>();
    let last = all.map(Result::unwrap).last().unwrap();
    assert_eq!(last["name"], "films", "{last:#}");
    // Both reviews seen; at least one write. A change that arrives after the film was
    // recomputed from both reviews finds it in line: skipped, not applied.
    let (applied, skipped) = (last["applied"].as_u64(), last["skipped"].as_u64());
    assert!(applied >= Some(1), "{last:#}");
    assert!(applied.unwrap() + skipped.unwrap() >= 2, "{last:#}");
    let film = Film::get(&db.store, &1).await.unwrap().unwrap();
    assert_eq!((film.reviews, film.rating_sum), (2, 9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_runs_until_ctrl_c_then_stops_cleanly() {
    let db = Db::new("cli_follow_ctrl_c").await;
    Film {
        id: 1,
        reviews: 0,
        rating_sum: 0,
    }
    .insert(&db.store)
    .await
    .unwrap();
    Follower::new(db.store.clone(), "films")
        .follow::<Review>()
        .catch_up()
        .await
        .unwrap();
    let child = std::process::Command::new(crate::support::BIN)
        .env("MONGODB_URI", &db.uri)
        .args(["--db", &db.name, "--json", "follow", "--name", "films"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let review = bson::doc! {"_id": 20_i64, "film_id": 1_i64, "rating": 3_i64};
    db.store.insert_one("reviews", review).await.unwrap();
    // Until the film is in line (the command follows), then Ctrl-C.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while Film::get(&db.store, &1).await.unwrap().unwrap().reviews != 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the command did not follow"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    let pid = child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let all: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    // At least one status line while it ran, then the report.
    assert!(all.len() >= 2, "{stdout}");
    let last = all.last().unwrap();
    assert_eq!(
        (last["running"].as_bool(), last["applied"].as_u64()),
        (Some(false), Some(1)),
        "{last:#}"
    );
    // It gave its lease up: the application's follower runs at once, from where it stopped.
    let app = Follower::new(db.store.clone(), "films").follow::<Review>();
    app.catch_up().await.unwrap();
    assert_eq!(app.status().passes, 0, "{:?}", app.status());
}

/// While the application's follower runs (it holds the lease), the command stops at once with
/// exit 6 and says who holds it; the application's follower goes on undisturbed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_exits_6_while_another_holds_the_lease() {
    let db = Db::new("cli_follow_held").await;
    Film {
        id: 1,
        reviews: 0,
        rating_sum: 0,
    }
    .insert(&db.store)
    .await
    .unwrap();
    let app = std::sync::Arc::new(Follower::new(db.store.clone(), "films").follow::<Review>());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let app = app.clone();
        tokio::spawn(async move {
            app.run(async move {
                let _ = stopped.await;
            })
            .await
        })
    };
    while !app.status().running || app.status().passes == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let out = db.run(&["follow", "--once"]);
    assert_eq!(out.status.code(), Some(6), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("holds its lease"), "{stderr}");
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
}

/// `--lease`: the lease the command takes is the one asked for (here 2 s, renewed while it
/// runs), so a command killed with SIGKILL holds off its successor that long, not the default
/// 30 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_takes_the_lease_it_is_given() {
    let db = Db::new("cli_follow_lease").await;
    Follower::new(db.store.clone(), "films")
        .follow::<Review>()
        .catch_up()
        .await
        .unwrap();
    let mut child = std::process::Command::new(crate::support::BIN)
        .env("MONGODB_URI", &db.uri)
        .args(["--db", &db.name, "--json", "follow", "--lease", "2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until the command holds the lease: its owner is in the follower's document.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let lease = loop {
        let found = db.docs("pattern_follow", &[]).await;
        if let Some(d) = found.into_iter().find(|d| d.get_str("owner").is_ok()) {
            break d;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the command took no lease"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let until = lease.get_datetime("until").unwrap().timestamp_millis();
    let now = bson::DateTime::now().timestamp_millis();
    assert!(
        until - now <= 2_500,
        "a lease of 2 s: it ends {} ms from now",
        until - now
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // Killed: the application's follower takes over once those 2 s have passed.
    let app = Follower::new(db.store.clone(), "films").follow::<Review>();
    loop {
        match app.catch_up().await {
            Ok(()) => break,
            Err(pattern_core::Error::LeaseHeld { .. }) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the lease never ended"
                );
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
}
