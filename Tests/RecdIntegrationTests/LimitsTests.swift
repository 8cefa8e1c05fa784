// Limits: concurrent connections and header size, each with a clear error, while a client already
// connected keeps being served.
import Foundation
import RecdAPI
import XCTest

final class LimitsTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--max-connections", "4"] }

    func testAFloodOfConnectionsGetsClearErrorsWhileAConnectedClientIsServed() throws {
        // One python process: a keep-alive client, then a flood of 12 connections held open, each
        // sending a request; the client asks again during the flood and after it.
        let script = """
            import http.client, json, socket, sys
            path = sys.argv[1]
            class UnixHTTP(http.client.HTTPConnection):
                def connect(self):
                    self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(path)
            def get(conn):
                conn.request("GET", "/v1/status", headers={"Host": "recd"})
                r = conn.getresponse(); body = r.read()
                return r.status, body.decode()
            client = UnixHTTP("recd"); out = {"before": get(client)[0]}
            flood = []
            for i in range(12):
                c = UnixHTTP("recd"); c.connect(); flood.append(c)
            answers = []
            for c in flood:
                try: answers.append(get(c))
                except Exception as e: answers.append((0, str(e)))
            out["flood"] = [a[0] for a in answers]
            out["refusal"] = next((a[1] for a in answers if a[0] == 503), "")
            out["during"] = get(client)[0]
            for c in flood: c.close()
            import time; time.sleep(0.3)
            out["after"] = get(UnixHTTP("recd"))[0]
            print(json.dumps(out))
            """
        let r = try Tools.run("python3", ["-c", script, daemon.socket])
        XCTAssertEqual(r.status, 0, r.stderr)
        let out = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(out["before"] as? Int, 200)
        let flood = try XCTUnwrap(out["flood"] as? [Int])
        // 4 slots: the client holds one, three flood connections are served, the other nine refused.
        XCTAssertEqual(flood.filter { $0 == 200 }.count, 3, "\(flood)")
        XCTAssertEqual(flood.filter { $0 == 503 }.count, 9, "\(flood)")
        let refusal = try XCTUnwrap(out["refusal"] as? String)
        XCTAssertTrue(refusal.contains("too_many_connections") && refusal.contains("limit of 4 connections"), refusal)
        XCTAssertEqual(out["during"] as? Int, 200, "the connected client is still served")
        XCTAssertEqual(out["after"] as? Int, 200, "slots come back when connections close")
    }

    func testOversizedHeadersAreRefusedAndTheDaemonGoesOn() throws {
        let big = String(repeating: "x", count: 100_000)
        let r = try Tools.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", daemon.socket,
                                       "-H", "X-Big: \(big)", "http://recd/v1/status"])
        XCTAssertEqual(r.stdout, "400")
        XCTAssertEqual(try daemon.recctl("status").status, 0)
        // An oversized body: 413 with the limit (as before), and nothing changed.
        let body = "{\"title\": \"\(String(repeating: "y", count: 70_000))\"}"
        let (code, text) = try daemon.curl("POST", "/v1/record/start", body: body)
        XCTAssertEqual(code, 413)
        XCTAssertTrue(text.contains("payload_too_large"), text)
        XCTAssertEqual(try daemon.recctlJSON(DaemonStatus.self, "status").activity, .idle)
    }
}
