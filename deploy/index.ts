// The entry point of the deploy/ Pulumi program (deploy/Pulumi.yaml); the program is deploy/program.ts.
import { deployProgram } from "./program";

export const { namespace } = deployProgram();
