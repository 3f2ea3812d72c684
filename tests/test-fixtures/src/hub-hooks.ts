/** The hub double as a test file of uploads uses it: one for the file, fresh state for each test. */
import { afterAll, afterEach, beforeAll } from "vitest";
import { startHubDouble, type HubDouble } from "./hub-server.js";

/**
 * Starts a hub double before the file's tests, its upload endpoints requiring "Bearer `token`", and closes it after
 * them; after each test, forgets the requests recorded and the 503s still pending (failOnce), and puts back
 * process.env as it was when this was called (tests point HF_ENDPOINT, HF_TOKEN, … at the double). The answer stands
 * for the double once started: reading or setting it before then throws.
 */
export function useHubDouble(token: string): HubDouble {
  let started: HubDouble | undefined;
  const saved = { ...process.env };
  beforeAll(async () => {
    started = await startHubDouble();
    started.token = token;
  });
  afterAll(() => started?.close());
  afterEach(() => {
    process.env = { ...saved };
    started!.requests.length = 0;
    started!.failOnce.clear();
  });
  const double = (): HubDouble => {
    if (started === undefined) throw new Error("useHubDouble: the hub double starts in beforeAll; use it from the tests");
    return started;
  };
  return new Proxy({} as HubDouble, {
    get: (_, key) => Reflect.get(double(), key),
    set: (_, key, value) => Reflect.set(double(), key, value),
  });
}
