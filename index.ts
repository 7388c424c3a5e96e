// The Pulumi entry point; the program itself lives in program/ so the CLI and the daemon can run it too.
import { stackProgram } from "./program/stackProgram";

export = stackProgram();
