// Globals shared by the pages' scripts: common.js defines window.SVC for the others.
interface Window {
  SVC: any
  trustedTypes?: any
}
