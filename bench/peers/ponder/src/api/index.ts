import { Hono } from "hono";

// Ponder requires an API file; the bench reads the table directly, so it serves no routes.
const app = new Hono();

export default app;
