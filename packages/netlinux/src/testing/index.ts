export {
  type RecordedCall,
  ScriptedCommandRunner,
  type ScriptedReply,
  type ScriptHandler,
} from './scripted-runner.js';
