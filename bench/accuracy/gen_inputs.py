#!/usr/bin/env python3
"""Deterministic inputs for the accuracy harness (bench/accuracy/run.sh).

usage: gen_inputs.py DIR TEXT_MB SQL_ROWS
  DIR/words.txt   TEXT_MB MB of pseudo-random words (fixed seed, Zipf-ish)
  DIR/script.sql  tables, inserts in one transaction, an index, selects, joins
"""
import random
import sys


def words_file(path, mb):
    rng = random.Random(4004)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    weights = [12, 9, 8, 8, 7, 7, 6, 6, 6, 4, 4, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1]
    vocab = []
    for _ in range(20000):
        n = rng.choice((2, 3, 3, 4, 4, 5, 5, 6, 7, 8, 9, 11))
        vocab.append("".join(rng.choices(letters, weights, k=n)))
    # Zipf-like word frequencies
    cum, acc = [], 0.0
    for i in range(len(vocab)):
        acc += 1.0 / (i + 1)
        cum.append(acc)
    target = int(mb * 1024 * 1024)
    out, size = [], 0
    while size < target:
        line = " ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(6, 16)))
        if rng.random() < 0.1:
            line += " %d" % rng.randint(0, 10 ** 6)
        line += ".\n"
        out.append(line)
        size += len(line)
    with open(path, "w") as f:
        f.write("".join(out)[:target])


def sql_file(path, rows):
    rng = random.Random(1997)
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
             "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]
    L = ["PRAGMA journal_mode=OFF;", "PRAGMA synchronous=OFF;",
         "CREATE TABLE cust(id INTEGER PRIMARY KEY, name TEXT, city INTEGER, score REAL);",
         "CREATE TABLE orders(id INTEGER PRIMARY KEY, cust INTEGER, amount INTEGER, note TEXT);",
         "CREATE TABLE city(id INTEGER PRIMARY KEY, label TEXT);", "BEGIN;"]
    for i in range(200):
        L.append("INSERT INTO city VALUES(%d,'%s-%d');" % (i, rng.choice(names), i))
    ncust = rows // 4
    for i in range(ncust):
        L.append("INSERT INTO cust VALUES(%d,'%s%s%d',%d,%.3f);" % (
            i, rng.choice(names), rng.choice(names), rng.randint(0, 9999), rng.randint(0, 199),
            rng.random() * 100))
    for i in range(rows):
        L.append("INSERT INTO orders VALUES(%d,%d,%d,'%s');" % (
            i, rng.randint(0, ncust - 1), rng.randint(1, 100000), rng.choice(names) * rng.randint(1, 3)))
    L += ["COMMIT;",
          "CREATE INDEX orders_cust ON orders(cust);",
          "CREATE INDEX cust_name ON cust(name);",
          "SELECT count(*), sum(amount), avg(amount) FROM orders;",
          "SELECT city, count(*) FROM cust GROUP BY city ORDER BY 2 DESC LIMIT 5;",
          "SELECT c.label, sum(o.amount) FROM orders o JOIN cust u ON o.cust = u.id "
          "JOIN city c ON u.city = c.id GROUP BY c.label ORDER BY 2 DESC LIMIT 5;",
          "SELECT u.name, count(*) FROM cust u JOIN orders o ON o.cust = u.id "
          "WHERE u.score > 50 GROUP BY u.id ORDER BY 2 DESC, 1 LIMIT 5;",
          "SELECT note, count(*), max(amount) FROM orders WHERE note LIKE '%a%' GROUP BY note "
          "ORDER BY 2 DESC LIMIT 5;",
          "SELECT count(*) FROM cust WHERE name BETWEEN 'd' AND 'k';",
          "UPDATE orders SET amount = amount + 1 WHERE cust % 7 = 0;",
          "SELECT sum(amount) FROM orders;"]
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    d, mb, rows = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    words_file(d + "/words.txt", mb)
    sql_file(d + "/script.sql", rows)
